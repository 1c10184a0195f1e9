package cli

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// NewCmdPreview is `slipway preview open|delete NAME`: Catalyst's preview environments.
func NewCmdPreview(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "preview",
		Aliases: []string{"previews"},
		Short:   "Open or delete a preview environment (a Catalyst Environment)",
		GroupID: groupCluster,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &FlagError{Err: fmt.Errorf("name what to do: open or delete"), Command: cmd.CommandPath()}
			}
			return &FlagError{Err: fmt.Errorf("unknown command %q: open or delete", args[0]), Command: cmd.CommandPath()}
		},
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdPreviewOpen(f, nil), NewCmdPreviewDelete(f, nil))
	return cmd
}

// PreviewOpenOptions are slipway preview open's.
type PreviewOpenOptions struct {
	f       *Factory
	Name    string
	Browser bool
}

// NewCmdPreviewOpen is `slipway preview open NAME`.
func NewCmdPreviewOpen(f *Factory, runF func(context.Context, *PreviewOpenOptions) error) *cobra.Command {
	opts := &PreviewOpenOptions{f: f}
	cmd := &cobra.Command{
		Use:   "open NAME",
		Short: "Print a preview's URL; --browser opens it",
		Long: `Print the URL a preview environment is served at (status.url, set once it is deployed and
available). With --browser, and only when standard output is a terminal, open it in the browser
($BROWSER, else xdg-open or open).`,
		Example: `  slipway preview open pr-123 -n my-team-my-project
  slipway preview open pr-123 --browser`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(previewKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return previewOpenRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Browser, "browser", false, "open the URL in the browser (on a terminal only)")
	return cmd
}

func previewOpenRun(ctx context.Context, opts *PreviewOpenOptions) error {
	f := opts.f
	kc, err := f.kubeConn()
	if err != nil {
		return err
	}
	o, err := previewKind.get(ctx, kc, kc.namespace, opts.Name)
	if err != nil {
		return err
	}
	e := o.(*catalystv1.Environment)
	if e.Status.URL == "" {
		ready, status := readyCells(e.Status.Conditions)
		return fmt.Errorf("preview %s has no URL yet (phase %s; Ready %s: %s)", e.Name, orDash(string(e.Status.Phase)), ready, status)
	}
	fmt.Fprintln(f.IOStreams.Out, e.Status.URL)
	if !opts.Browser {
		return nil
	}
	if !f.IOStreams.IsStdoutTTY() {
		fmt.Fprintln(f.IOStreams.ErrOut, "Not opening a browser: standard output is not a terminal.")
		return nil
	}
	return openBrowser(f, e.Status.URL)
}

// openBrowser opens an http(s) URL with $BROWSER, else the system's opener.
func openBrowser(f *Factory, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not opening %q: not an http or https URL", raw)
	}
	var argv []string
	switch b := strings.Fields(f.Getenv("BROWSER")); {
	case len(b) > 0:
		argv = b
	case runtime.GOOS == "darwin":
		argv = []string{"open"}
	case runtime.GOOS == "windows":
		argv = []string{"rundll32", "url.dll,FileProtocolHandler"}
	default:
		argv = []string{"xdg-open"}
	}
	cmd := exec.Command(argv[0], append(argv[1:], u.String())...)
	cmd.Stdout, cmd.Stderr = f.IOStreams.ErrOut, f.IOStreams.ErrOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("opening the browser (%s): %w", argv[0], err)
	}
	return nil
}

// PreviewDeleteOptions are slipway preview delete's.
type PreviewDeleteOptions struct {
	f    *Factory
	Name string
	Yes  bool
	Wait bool
}

// NewCmdPreviewDelete is `slipway preview delete NAME`.
func NewCmdPreviewDelete(f *Factory, runF func(context.Context, *PreviewDeleteOptions) error) *cobra.Command {
	opts := &PreviewDeleteOptions{f: f}
	cmd := &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"rm", "remove"},
		Short:   "Delete a preview environment, its namespace and everything deployed there",
		Long: `Delete a preview (a Catalyst Environment of type development). The operator then deletes its
build Jobs, uninstalls its release and deletes its namespace with everything in it; the
Environment is gone once the namespace is. Environments of type deployment (staging,
production) are refused. Asks for confirmation on a terminal; elsewhere --yes is required.
--wait waits until it is gone (exit 8 if --timeout passes first).`,
		Example: `  slipway preview delete pr-123 -n my-team-my-project
  slipway preview delete pr-123 --yes --wait`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(previewKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return previewDeleteRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "wait until the preview and its namespace are gone")
	return cmd
}

func previewDeleteRun(ctx context.Context, opts *PreviewDeleteOptions) error {
	f := opts.f
	kc, err := f.kubeConn()
	if err != nil {
		return err
	}
	k := previewKind
	o, err := k.get(ctx, kc, kc.namespace, opts.Name)
	if err != nil {
		return err
	}
	e := o.(*catalystv1.Environment)
	if !isPreview(e) {
		return fmt.Errorf("environment %s/%s is of type %s (a long-lived environment), not a preview: slipway deletes previews only",
			e.Namespace, e.Name, e.Spec.Type)
	}
	what := "its namespace"
	if e.Status.Namespace != "" {
		what += " " + e.Status.Namespace
	}
	if err := f.confirm(opts.Yes, fmt.Sprintf("Delete preview %s in namespace %s, with %s and everything deployed there?", e.Name, e.Namespace, what)); err != nil {
		return err
	}
	log := kubeLog{f.IOStreams.ErrOut}
	log.step("Deleting preview %s/%s", e.Namespace, e.Name)
	uid := e.UID
	if err := kc.deleteObject(ctx, k, e); err != nil {
		return k.kubeErr(err, e.Namespace, e.Name)
	}
	if !opts.Wait {
		log.done("Preview %s/%s is being deleted: the operator removes %s, its release and its build Jobs", e.Namespace, e.Name, what)
		return nil
	}
	return waitPreviewGone(ctx, f, kc, e.Namespace, e.Name, uid)
}

// waitPreviewGone waits until the Environment of that uid is gone, printing its Ready message
// (what the deletion waits for) as it changes.
func waitPreviewGone(ctx context.Context, f *Factory, kc *kubeConn, namespace, name string, uid types.UID) error {
	log := kubeLog{f.IOStreams.ErrOut}
	said := ""
	err := previewKind.waitObject(ctx, kc, types.NamespacedName{Namespace: namespace, Name: name}, func(o kubeObject) (bool, error) {
		if o == nil || o.GetUID() != uid {
			return true, nil
		}
		_, status := readyCells(o.(*catalystv1.Environment).Status.Conditions)
		if status != said {
			log.wait("%s", status)
			said = status
		}
		return false, nil
	})
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return Pending("preview %s/%s: still being deleted after --timeout %s: %s", namespace, name, f.Global.Timeout, said)
	}
	if err != nil {
		return err
	}
	log.done("Preview %s/%s deleted", namespace, name)
	return nil
}
