package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// NewCmdReconcile is `slipway reconcile KIND NAME`.
func NewCmdReconcile(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile KIND NAME",
		Short: "Ask an operator to reconcile an object now, and wait for the result",
		Long: `Ask the operator to act on an object now (flux reconcile's way: an annotation the operator
acts on once), wait until it has, and print the result. The exit code says how it ended: 0 when
the object is Ready, 1 when it is not (the Ready message on standard error), 8 when --timeout
passed first (the operator is still at it).`,
		GroupID: groupCluster,
		RunE:    unknownKubeKind("werfbundle"),
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdReconcileWerfBundle(f, nil))
	return cmd
}

// waitState is how far what a command waits for got.
type waitState int

const (
	statePending waitState = iota
	stateSucceeded
	stateFailed
)

// kubeLog writes flux's progress lines on standard error: ► a step, ◎ waiting, ✔ done.
type kubeLog struct{ w io.Writer }

func (l kubeLog) step(format string, args ...any) { fmt.Fprintf(l.w, "► "+format+"\n", args...) }
func (l kubeLog) wait(format string, args ...any) { fmt.Fprintf(l.w, "◎ "+format+"\n", args...) }
func (l kubeLog) done(format string, args ...any) { fmt.Fprintf(l.w, "✔ "+format+"\n", args...) }

// waitObject reads the object at key until check says it is done (or fails), watching it in
// between (kubectl wait's way, resuming from the last version read). check sees nil once the
// object is gone. When ctx ends first, it returns ctx's error.
func (k *kubeKind) waitObject(ctx context.Context, kc *kubeConn, key types.NamespacedName, check func(kubeObject) (bool, error)) error {
	sel := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	for {
		o, err := kc.getObject(ctx, k, key.Namespace, key.Name)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case apierrors.IsNotFound(err):
			o = nil
		case err != nil:
			return k.kubeErr(err, key.Namespace, key.Name)
		}
		if done, err := check(o); done || err != nil {
			return err
		}
		rv := ""
		if o != nil {
			rv = o.GetResourceVersion()
		}
		w, err := kc.watchObjects(ctx, k, key.Namespace, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return k.kubeErr(err, key.Namespace, key.Name)
		}
		done, err := drainWatch(ctx, w, check)
		w.Stop()
		if done || err != nil {
			return err
		}
		// The watch ended (the server closed it, or its version is too old): read again.
	}
}

// drainWatch feeds a watch's objects to check until it is done, the watch ends (false, nil) or
// ctx does.
func drainWatch(ctx context.Context, w watch.Interface, check func(kubeObject) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			var o kubeObject
			switch ev.Type {
			case watch.Added, watch.Modified:
				o, ok = ev.Object.(kubeObject)
				if !ok {
					continue
				}
			case watch.Deleted:
			case watch.Error:
				return false, nil
			default:
				continue
			}
			if done, err := check(o); done || err != nil {
				return done, err
			}
		}
	}
}

// waitResult follows an object of the kind until result says it succeeded or failed, printing
// each new pending message; then prints the object on standard output and returns nil, the
// failure, or (at --timeout) a PendingError with the last pending message.
func waitResult(ctx context.Context, f *Factory, kc *kubeConn, k *kubeKind, key types.NamespacedName,
	result func(kubeObject) (waitState, string)) error {
	log := kubeLog{f.IOStreams.ErrOut}
	var last kubeObject
	var state waitState
	var msg, said string
	err := k.waitObject(ctx, kc, key, func(o kubeObject) (bool, error) {
		if o == nil {
			return false, fmt.Errorf("%s %s was deleted in namespace %s", k.name, key.Name, key.Namespace)
		}
		last = o
		state, msg = result(o)
		if state == statePending && msg != said {
			log.wait("%s", msg)
			said = msg
		}
		return state != statePending, nil
	})
	timedOut := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if err != nil && !timedOut {
		return err
	}
	if timedOut && msg == "" {
		msg = "nothing read from the cluster yet"
	}
	if last != nil {
		if perr := printKubeObjects(f, k, []kubeObject{last}, false, true); perr != nil {
			return perr
		}
	}
	switch {
	case timedOut:
		return Pending("%s %s/%s: still under way after --timeout %s: %s", k.name, key.Namespace, key.Name, f.Global.Timeout, msg)
	case state == stateFailed:
		return fmt.Errorf("%s %s/%s: %s", k.name, key.Namespace, key.Name, msg)
	}
	log.done("%s", msg)
	return nil
}
