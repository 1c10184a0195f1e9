package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// DeployOptions are slipway deploy's: the flags as given, and the request built from them (or
// read from -f).
type DeployOptions struct {
	f       *Factory
	flags   *pflag.FlagSet
	watcher Watcher

	File              string
	Operator, Version string
	Clusters          []string
	Environments      []string
	Strategy          string
	ValuesFile        string
	ValuesFor         []string
	BakeWindow        string
	Analyses          []string
	DryRun            bool
	Watch             bool

	Initial, Increment, SuccessThreshold float64
	EvaluationPeriod                     string
	Stages                               []float64
	BlueNamespace, GreenNamespace        string
	AutoSwitch                           bool
	ValidationPeriod                     string
	ClusterOrder                         []string
	PauseBetweenClusters                 string
	ParallelClusters                     int
	SkipHealthChecks                     bool

	// Request is what is sent, built by prepare.
	Request *api.DeploymentRequest
}

// strategyFlags are the flags of each strategy's config, and the config field each sets.
var strategyFlags = map[api.Strategy]map[string]string{
	api.StrategyCanary: {"initial": "canaryConfig.initialPercentage", "increment": "canaryConfig.incrementPercentage",
		"evaluation-period": "canaryConfig.evaluationPeriod", "success-threshold": "canaryConfig.successThreshold",
		"stages": "canaryConfig.stages"},
	api.StrategyBlueGreen: {"blue-namespace": "blueGreenConfig.blueNamespace", "green-namespace": "blueGreenConfig.greenNamespace",
		"validation-period": "blueGreenConfig.validationPeriod", "auto-switch": "blueGreenConfig.autoSwitch"},
	api.StrategyRolling: {"cluster-order": "rollingConfig.clusterOrder", "validation-period": "rollingConfig.validationPeriod",
		"pause-between-clusters": "rollingConfig.pauseBetweenClusters"},
	api.StrategyDirect: {"parallel-clusters": "directConfig.parallelClusters", "skip-health-checks": "directConfig.skipHealthChecks"},
}

// strategyNames are --strategy's values.
var strategyNames = map[string]api.Strategy{"canary": api.StrategyCanary, "bluegreen": api.StrategyBlueGreen,
	"blue-green": api.StrategyBlueGreen, "rolling": api.StrategyRolling, "direct": api.StrategyDirect}

// NewCmdDeploy is `slipway deploy OPERATOR VERSION`.
func NewCmdDeploy(f *Factory, runF func(context.Context, *DeployOptions) error) *cobra.Command {
	opts := &DeployOptions{f: f}
	cmd := &cobra.Command{
		Use:   "deploy OPERATOR VERSION (--clusters A,B | --environment ENV) --strategy STRATEGY [flags] | deploy -f REQUEST.json",
		Short: "Deploy an operator version to clusters with a strategy",
		Long: `Deploy an operator's version to clusters (--clusters) or to every cluster of environments
(--environment) with a strategy: canary, bluegreen, rolling or direct. Each strategy's settings
are flags with the design's defaults; a flag of another strategy is refused. Periods are ISO 8601
durations (PT5M) or Go durations (5m).

-f sends a request file in the design's JSON as it is ('-' reads standard input), instead of the
arguments and flags. --dry-run plans the deployment and prints the plan (stages with their
clusters, the approvals it would ask for, each cluster's CRD report) without storing anything.`,
		Example: `  # Canary over the Dev and Staging clusters: 10 %, then 30 %, then all, 10 minutes each
  slipway deploy cert-manager 1.14.0 --environment Dev,Staging --strategy canary \
      --initial 10 --increment 20 --evaluation-period 10m

  # What would happen, without deploying
  slipway deploy cert-manager 1.14.0 --clusters dev-1,prod-eu --strategy rolling --dry-run

  # BlueGreen that waits for slipway deployment switch
  slipway deploy widget 2.0.0 --clusters prod-eu --strategy bluegreen --auto-switch=false

  # The design's JSON
  slipway deploy -f request.json`,
		Args: cobraArgs(cobra.MaximumNArgs(2)),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return f.completeOperators()(cmd, args, s)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		GroupID: groupManager,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.prepare(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deployRun(cmd.Context(), opts)
		},
	}
	opts.flags = cmd.Flags()
	opts.addFlags(cmd)
	if f.NewWatcher != nil {
		opts.watcher = f.NewWatcher()
		opts.watcher.AddFlags(cmd.Flags())
		cmd.Flags().BoolVar(&opts.Watch, "watch", false, "follow the deployment until it ends (as slipway deployment watch)")
	}
	return cmd
}

func (opts *DeployOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&opts.File, "filename", "f", "", "a request in the design's JSON ('-': standard input) instead of arguments and flags")
	fl.StringSliceVar(&opts.Clusters, "clusters", nil, "the target clusters, by name")
	fl.StringSliceVar(&opts.Environments, "environment", nil, "the target environments (every cluster in them): Dev, Staging, Production")
	fl.StringVar(&opts.Strategy, "strategy", "", "canary, bluegreen, rolling or direct")
	fl.StringVar(&opts.ValuesFile, "values", "", "a YAML or JSON file of Helm values")
	fl.StringArrayVar(&opts.ValuesFor, "values-for", nil, "ENV=FILE: Helm values for one environment, over --values (repeatable)")
	fl.StringVar(&opts.BakeWindow, "bake-window", "", "how long after it completes the deployment is still watched as its clusters' change (PT0S or 0s: none; default: the manager's --bake-window)")
	fl.StringArrayVar(&opts.Analyses, "analysis", nil, "a stored analysis template to run in each stage's hold, with its args: NAME or NAME:ARG=VALUE,ARG=VALUE (repeatable)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan and deploy nothing")
	// canary
	fl.Float64Var(&opts.Initial, "initial", api.DefaultInitialPercentage, "canary: the first stage's share of the clusters, in percent")
	fl.Float64Var(&opts.Increment, "increment", api.DefaultIncrementPercentage, "canary: the percentage added by the second stage")
	fl.StringVar(&opts.EvaluationPeriod, "evaluation-period", api.FormatDuration(api.DefaultEvaluationPeriod), "canary: how long each stage is watched before the next")
	fl.Float64Var(&opts.SuccessThreshold, "success-threshold", api.DefaultSuccessThreshold*100, "canary: the percentage of a stage's clusters that must be healthy")
	fl.Float64SliceVar(&opts.Stages, "stages", nil, "canary: every stage's cumulative percentage, the last 100 (instead of --initial and --increment)")
	// bluegreen
	fl.StringVar(&opts.BlueNamespace, "blue-namespace", "", "bluegreen: where the running version is (default: wherever the operator runs)")
	fl.StringVar(&opts.GreenNamespace, "green-namespace", "", "bluegreen: where the new version goes (default: blue's + \"-green\")")
	fl.BoolVar(&opts.AutoSwitch, "auto-switch", true, "bluegreen: switch once green is validated (false: wait for slipway deployment switch)")
	// bluegreen, rolling
	fl.StringVar(&opts.ValidationPeriod, "validation-period", api.FormatDuration(api.DefaultValidationPeriod), "bluegreen, rolling: how long a new install is watched")
	// rolling
	fl.StringSliceVar(&opts.ClusterOrder, "cluster-order", nil, "rolling: clusters in the order to deploy (the rest follow by environment, then name)")
	fl.StringVar(&opts.PauseBetweenClusters, "pause-between-clusters", "PT0S", "rolling: a wait between two clusters")
	// direct
	fl.IntVar(&opts.ParallelClusters, "parallel-clusters", 0, "direct: clusters installed at once (default: all)")
	fl.BoolVar(&opts.SkipHealthChecks, "skip-health-checks", false, "direct: skip the health validation after the installs")
	_ = cmd.RegisterFlagCompletionFunc("strategy", enumCompletion("canary", "bluegreen", "rolling", "direct"))
	_ = cmd.RegisterFlagCompletionFunc("environment", enumListCompletion(environments()...))
	_ = cmd.RegisterFlagCompletionFunc("clusters", opts.f.listFlagFrom(clusterNames))
	_ = cmd.RegisterFlagCompletionFunc("cluster-order", opts.f.listFlagFrom(clusterNames))
}

// prepare checks the arguments and flags and builds the request; nothing is sent on an error.
func (opts *DeployOptions) prepare(args []string) error {
	if opts.Watch && opts.DryRun {
		return flagErrorf("--watch and --dry-run do not go together: a dry run deploys nothing")
	}
	var err error
	if opts.File != "" {
		opts.Request, err = opts.fromFile(args)
	} else {
		opts.Request, err = opts.fromFlags(args)
	}
	if err != nil {
		return err
	}
	return opts.checkConfig()
}

// requestFlags are the flags that build a request, refused beside -f.
var requestFlags = []string{"clusters", "environment", "strategy", "values", "values-for", "bake-window", "analysis"}

func (opts *DeployOptions) fromFile(args []string) (*api.DeploymentRequest, error) {
	if len(args) > 0 {
		return nil, flagErrorf("-f takes the operator and version from the file: drop the arguments %s", strings.Join(args, " "))
	}
	for _, name := range opts.changedOf(requestFlags, allStrategyFlags()) {
		return nil, flagErrorf("--%s does not go with -f: the file holds the whole request", name)
	}
	var data []byte
	var err error
	if opts.File == "-" {
		data, err = io.ReadAll(io.LimitReader(opts.f.IOStreams.In, api.MaxBody+1))
	} else {
		data, err = os.ReadFile(opts.File)
	}
	if err != nil {
		return nil, err
	}
	req, err := api.DecodeDeploymentRequest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.File, err)
	}
	if !req.Strategy.Valid() {
		return nil, fmt.Errorf("%s: strategy must be one of Canary, BlueGreen, Rolling, Direct, not %q", opts.File, req.Strategy)
	}
	return req, nil
}

func allStrategyFlags() []string {
	var out []string
	for _, m := range strategyFlags {
		for name := range m {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// changedOf are the named flags the user gave.
func (opts *DeployOptions) changedOf(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, name := range l {
			if opts.flags.Changed(name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func (opts *DeployOptions) fromFlags(args []string) (*api.DeploymentRequest, error) {
	if len(args) != 2 {
		return nil, flagErrorf("give the operator and the version: slipway deploy OPERATOR VERSION (or -f REQUEST.json)")
	}
	req := &api.DeploymentRequest{Operator: args[0], Version: args[1]}
	req.Clusters, req.Environments = splitList(opts.Clusters), splitList(opts.Environments)
	switch {
	case len(req.Clusters) == 0 && len(req.Environments) == 0:
		return nil, flagErrorf("give the targets: --clusters A,B or --environment ENV")
	case len(req.Clusters) > 0 && len(req.Environments) > 0:
		return nil, flagErrorf("--clusters and --environment do not go together: pick clusters by name or by environment")
	}
	for _, e := range req.Environments {
		if !slices.Contains(environments(), e) {
			return nil, flagErrorf("--environment must be among %s, not %q", join(environments()), e)
		}
	}
	if opts.Strategy == "" {
		return nil, flagErrorf("--strategy is required: canary, bluegreen, rolling or direct")
	}
	st, ok := strategyNames[strings.ToLower(opts.Strategy)]
	if !ok {
		return nil, flagErrorf("--strategy must be canary, bluegreen, rolling or direct, not %q", opts.Strategy)
	}
	req.Strategy = st
	for _, name := range opts.changedOf(allStrategyFlags()) {
		if _, ok := strategyFlags[st][name]; !ok {
			return nil, flagErrorf("--%s is not a setting of the %s strategy", name, strings.ToLower(string(st)))
		}
	}
	if err := opts.setConfig(req); err != nil {
		return nil, err
	}
	if opts.flags.Changed("bake-window") {
		var err error
		if req.BakeWindow, err = isoDuration("bake-window", opts.BakeWindow); err != nil {
			return nil, err
		}
	}
	for _, a := range opts.Analyses {
		ref, err := analysisRef(a)
		if err != nil {
			return nil, err
		}
		req.Analyses = append(req.Analyses, ref)
	}
	return req, opts.setValues(req)
}

// setConfig sets the strategy's config from the flags given; flags left out are left out of the
// request, so that the manager applies the defaults.
func (opts *DeployOptions) setConfig(req *api.DeploymentRequest) error {
	ch := opts.flags.Changed
	var err error
	switch req.Strategy {
	case api.StrategyCanary:
		c := &api.CanaryConfig{Stages: opts.Stages}
		if ch("initial") {
			c.InitialPercentage = &opts.Initial
		}
		if ch("increment") {
			c.IncrementPercentage = &opts.Increment
		}
		if ch("success-threshold") {
			c.SuccessThreshold = &opts.SuccessThreshold
		}
		if ch("evaluation-period") {
			c.EvaluationPeriod, err = isoDuration("evaluation-period", opts.EvaluationPeriod)
		}
		req.CanaryConfig = c
	case api.StrategyBlueGreen:
		c := &api.BlueGreenConfig{BlueNamespace: opts.BlueNamespace, GreenNamespace: opts.GreenNamespace}
		if ch("auto-switch") {
			c.AutoSwitch = &opts.AutoSwitch
		}
		if ch("validation-period") {
			c.ValidationPeriod, err = isoDuration("validation-period", opts.ValidationPeriod)
		}
		req.BlueGreenConfig = c
	case api.StrategyRolling:
		c := &api.RollingConfig{ClusterOrder: splitList(opts.ClusterOrder)}
		if ch("validation-period") {
			if c.ValidationPeriod, err = isoDuration("validation-period", opts.ValidationPeriod); err != nil {
				return err
			}
		}
		if ch("pause-between-clusters") {
			c.PauseBetweenClusters, err = isoDuration("pause-between-clusters", opts.PauseBetweenClusters)
		}
		req.RollingConfig = c
	case api.StrategyDirect:
		c := &api.DirectConfig{SkipHealthChecks: opts.SkipHealthChecks}
		if ch("parallel-clusters") {
			c.ParallelClusters = &opts.ParallelClusters
		}
		req.DirectConfig = c
	}
	return err
}

// isoDuration reads a period given as ISO 8601 (PT5M) or as a Go duration (5m, 1h30m) and
// returns it in ISO 8601, as the API takes it.
func isoDuration(flag, s string) (string, error) {
	if _, err := api.ParseDuration(s); err == nil {
		return s, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", flagErrorf("--%s must be a duration such as PT5M or 5m, not %q", flag, s)
	}
	return api.FormatDuration(d), nil
}

func (opts *DeployOptions) setValues(req *api.DeploymentRequest) error {
	if opts.ValuesFile != "" {
		v, err := readValues(opts.f, opts.ValuesFile)
		if err != nil {
			return fmt.Errorf("--values: %w", err)
		}
		req.Values = v
	}
	for _, kv := range opts.ValuesFor {
		env, file, ok := strings.Cut(kv, "=")
		if !ok || env == "" || file == "" {
			return flagErrorf("--values-for takes ENV=FILE, not %q", kv)
		}
		if !slices.Contains(environments(), env) {
			return flagErrorf("--values-for: the environment must be among %s, not %q", join(environments()), env)
		}
		v, err := readValues(opts.f, file)
		if err != nil {
			return fmt.Errorf("--values-for %s: %w", env, err)
		}
		if req.ValuesByEnvironment == nil {
			req.ValuesByEnvironment = map[string]json.RawMessage{}
		}
		req.ValuesByEnvironment[env] = v
	}
	return nil
}

// checkConfig resolves the strategy's config and the bake window as the manager will
// (api.ResolveSettings, DeploymentRequest.ResolveBakeWindow), so that a bad setting is refused before
// anything is sent; a message about a field names its flag when the flags built the request.
func (opts *DeployOptions) checkConfig() error {
	r := opts.Request
	_, err := api.ResolveSettings(r)
	if err == nil {
		_, err = r.ResolveBakeWindow(0)
	}
	if err == nil {
		return nil
	}
	if e, ok := invalid.As(err); ok && opts.File == "" {
		if e.Field == "bakeWindow" {
			return flagErrorf("--bake-window: %s", strings.TrimPrefix(e.Error(), e.Field+": "))
		}
		for name, field := range strategyFlags[r.Strategy] {
			if e.Field == field || strings.HasPrefix(e.Field, field+"[") {
				return flagErrorf("--%s: %s", name, strings.TrimPrefix(e.Error(), e.Field+": "))
			}
		}
	}
	if opts.File != "" {
		return fmt.Errorf("%s: %w", opts.File, err)
	}
	return &FlagError{Err: err}
}

func deployRun(ctx context.Context, opts *DeployOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	if opts.DryRun {
		plan, err := c.DryRun(ctx, opts.Request)
		if err != nil {
			return err
		}
		return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), plan, func(p *output.Printer) error { return printPlan(p, plan) })
	}
	d, err := c.CreateDeployment(ctx, opts.Request)
	if err != nil {
		return err
	}
	if opts.Watch {
		fmt.Fprintf(f.IOStreams.ErrOut, "Deployment %s created (%s); watching it.\n", d.ID, d.Status)
		return opts.watcher.Watch(ctx, d.ID)
	}
	if f.OutputFormat() == output.FormatTable {
		fmt.Fprintf(f.IOStreams.ErrOut, "Deployment %s created (%s). Follow it with: slipway deployment get %s\n", d.ID, d.Status, d.ID)
	}
	return printDeployment(f, d)
}

// analysisRef reads --analysis NAME[:ARG=VALUE,…] as a request's reference to a stored template.
func analysisRef(v string) (api.AnalysisRef, error) {
	name, args, _ := strings.Cut(v, ":")
	if name == "" {
		return api.AnalysisRef{}, flagErrorf("--analysis needs a template's name, as in --analysis error-rate or --analysis error-rate:max=0.01")
	}
	ref := api.AnalysisRef{Template: name}
	if args == "" {
		return ref, nil
	}
	for _, kv := range strings.Split(args, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return api.AnalysisRef{}, flagErrorf("--analysis %s: an argument is ARG=VALUE, not %q", name, kv)
		}
		ref.Args = append(ref.Args, api.AnalysisArg{Name: k, Value: &val})
	}
	return ref, nil
}
