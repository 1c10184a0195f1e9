package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// groupCluster is the in-cluster verbs' group in slipway --help.
const groupCluster = "cluster"

// NewCmdGet is `slipway get KIND`: the in-cluster objects of slipway's operators, through the
// kubeconfig, with the columns flux get shows (NAME ... READY STATUS) and each kind's own.
func NewCmdGet(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get KIND [NAME]",
		Short: "List WerfBundles, WebApps or preview environments in a cluster",
		Long: `List the objects of slipway's operators in the cluster of the kubeconfig (KUBECONFIG,
--kubeconfig, --context, -n as kubectl reads them): READY and STATUS are the Ready condition's
status and message, after each kind's own columns. -A lists every namespace.`,
		Example: `  slipway get werfbundles -A
  slipway get webapps -n shop
  slipway get previews -n my-team-my-project -o yaml`,
		GroupID: groupCluster,
		RunE:    unknownKubeKind("werfbundles, webapps or previews"),
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdGetWerfBundles(f, nil), NewCmdGetWebApps(f, nil), NewCmdGetPreviews(f, nil))
	return cmd
}

// unknownKubeKind is the run of a parent command named without a kind it knows.
func unknownKubeKind(kinds string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return &FlagError{Err: fmt.Errorf("name a kind: %s", kinds), Command: cmd.CommandPath()}
		}
		return &FlagError{Err: fmt.Errorf("unknown kind %q: %s", args[0], kinds), Command: cmd.CommandPath()}
	}
}

// addKubeFlags gives an in-cluster verb kubectl's flags: --kubeconfig, --context (here the
// kubeconfig's context, as with kubectl and flux; --kube-context says the same) and -n.
func (f *Factory) addKubeFlags(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	f.AddKubeFlags(pf)
	pf.StringVar(&f.KubeConfig.Context, "context", f.KubeConfig.Context, "the kubeconfig context to use (default: its current context)")
	_ = pf.MarkHidden("kube-context") // --context says it here
	_ = cmd.MarkPersistentFlagFilename("kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("context", f.completeKubeContexts)
	_ = cmd.RegisterFlagCompletionFunc("kube-context", f.completeKubeContexts)
	_ = cmd.RegisterFlagCompletionFunc("namespace", f.completeNamespaces)
}

// kubeKind describes one kind the in-cluster verbs read: its names, its table and how to list it.
type kubeKind struct {
	// name is the singular lower-case name ("werfbundle"), plural the plural ("werfbundles"),
	// title how messages name it ("WerfBundle").
	name, plural, title string
	// resource is the API's plural resource name ("environments" for previews).
	resource string
	gvk      schema.GroupVersionKind
	newObj   func() kubeObject
	// headers and row are the kind's own columns, between NAME and READY/STATUS.
	headers []string
	row     func(p *output.Printer, o kubeObject) []string
	// conditions are the object's status.conditions.
	conditions func(o kubeObject) []metav1.Condition
	// keep, when set, filters what is listed (previews are development Environments).
	keep func(o kubeObject) bool
}

// kubeErr says what an API error means for a kind: a kind the cluster does not serve, an
// object that is not there, or a refusal (exit 4).
func (k *kubeKind) kubeErr(err error, namespace, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotServed):
		return fmt.Errorf("the cluster does not serve %s (%s): are slipway's CRDs installed? (kubectl get crd %s.%s)",
			k.title+"s", k.gvk.GroupVersion(), k.resource, k.gvk.Group)
	case apierrors.IsNotFound(err) && name != "":
		return fmt.Errorf("%s %s not found in namespace %s", k.name, name, namespace)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &AuthError{Err: err}
	}
	return err
}

// get reads one object of the kind.
func (k *kubeKind) get(ctx context.Context, kc *kubeConn, namespace, name string) (kubeObject, error) {
	o, err := kc.getObject(ctx, k, namespace, name)
	return o, k.kubeErr(err, namespace, name)
}

// list reads the kind's objects in namespace ("" all), sorted by namespace and name.
func (k *kubeKind) list(ctx context.Context, kc *kubeConn, namespace string) ([]kubeObject, error) {
	objs, err := kc.listObjects(ctx, k, namespace)
	if err != nil {
		return nil, k.kubeErr(err, namespace, "")
	}
	out := make([]kubeObject, 0, len(objs))
	for _, o := range objs {
		if k.keep == nil || k.keep(o) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, nil
}

// GetOptions are slipway get KIND's.
type GetOptions struct {
	f             *Factory
	kind          *kubeKind
	Name          string
	AllNamespaces bool
}

// newCmdGetKind is `slipway get KIND [NAME]` for one kind.
func newCmdGetKind(f *Factory, k *kubeKind, aliases []string, short, example string, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{f: f, kind: k}
	cmd := &cobra.Command{
		Use:               k.plural + " [NAME]",
		Aliases:           aliases,
		Short:             short,
		Example:           example,
		Args:              cobraArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: f.completeNames(k),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
				if opts.AllNamespaces {
					return flagErrorf("a NAME and -A do not go together: name the namespace with -n")
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return kubeGetRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "list every namespace's (adds a NAMESPACE column)")
	return cmd
}

func kubeGetRun(ctx context.Context, opts *GetOptions) error {
	f, k := opts.f, opts.kind
	kc, err := f.kubeConn()
	if err != nil {
		return err
	}
	if opts.Name != "" {
		o, err := k.get(ctx, kc, kc.namespace, opts.Name)
		if err != nil {
			return err
		}
		if k.keep != nil && !k.keep(o) {
			return fmt.Errorf("%s %s in namespace %s is not a %s", k.title, opts.Name, kc.namespace, k.name)
		}
		return printKubeObjects(f, k, []kubeObject{o}, false, true)
	}
	ns := kc.namespace
	if opts.AllNamespaces {
		ns = ""
	}
	objs, err := k.list(ctx, kc, ns)
	if err != nil {
		return err
	}
	if len(objs) == 0 && f.OutputFormat() == output.FormatTable {
		where := "in namespace " + ns
		if ns == "" {
			where = "in any namespace"
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "No %s %s.\n", k.plural, where)
		return nil
	}
	return printKubeObjects(f, k, objs, opts.AllNamespaces, false)
}

// printKubeObjects prints objects as the kind's table, or as JSON or YAML the way kubectl does (one
// object, or a List; managed fields left out).
func printKubeObjects(f *Factory, k *kubeKind, objs []kubeObject, allNamespaces, single bool) error {
	var v any
	if f.OutputFormat() != output.FormatTable {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = kubeOutput(k, o)
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items}
		if single {
			v = items[0]
		}
	}
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), v, func(p *output.Printer) error {
		headers := append([]string{"name"}, k.headers...)
		if allNamespaces {
			headers = append([]string{"namespace"}, headers...)
		}
		t := p.Table(append(headers, "ready", "status")...)
		for _, o := range objs {
			t.Row(kubeTableRow(p, k, o, allNamespaces)...)
		}
		return t.Render()
	})
}

// kubeTableRow is one object's cells.
func kubeTableRow(p *output.Printer, k *kubeKind, o kubeObject, allNamespaces bool) []string {
	var cells []string
	if allNamespaces {
		cells = append(cells, o.GetNamespace())
	}
	cells = append(cells, o.GetName())
	cells = append(cells, k.row(p, o)...)
	ready, status := readyCells(k.conditions(o))
	return append(cells, ready, status)
}

// kubeOutput is the object as JSON and YAML show it: its apiVersion and kind set, its managed
// fields left out (kubectl's default).
func kubeOutput(k *kubeKind, o kubeObject) runtime.Object {
	c := o.DeepCopyObject().(kubeObject)
	c.SetManagedFields(nil)
	c.GetObjectKind().SetGroupVersionKind(k.gvk)
	return c
}

// readyCells are READY and STATUS: the Ready condition's status and the first line of its
// message (the whole message is in -o yaml); Unknown before the operator has written one.
func readyCells(conds []metav1.Condition) (ready, status string) {
	c := conditions.Get(conds, conditions.Ready)
	if c == nil {
		return string(metav1.ConditionUnknown), "waiting to be reconciled"
	}
	return string(c.Status), messageLine(c.Message)
}

// messageLine is a message's first line, with " …" when more follow.
func messageLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// ageCell is an AGE cell: "3d" on a terminal (kubectl's habit), the time in RFC 3339 when piped.
func ageCell(p *output.Printer, t metav1.Time) string {
	return strings.TrimSuffix(p.Time(t.Time), " ago")
}

// completeNames completes an object name of the kind in the flags' namespace.
func (f *Factory) completeNames(k *kubeKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kc, err := f.kubeConn()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		objs, err := k.list(ctx, kc, kc.namespace)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeKubeContexts completes the kubeconfig's context names.
func (f *Factory) completeKubeContexts(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	raw, err := f.KubeConfig.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for name := range raw.Contexts {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces completes namespace names (when the user may list them).
func (f *Factory) completeNamespaces(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	kc, err := f.kubeConn()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	l, err := kc.dyn.Resource(namespacesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ns := range l.Items {
		out = append(out, ns.GetName())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
