// Command networkpolicy enforces NetworkPolicies for the pods of one real node of the local
// control plane (internal/controlplane), with the NetworkPolicy controller of SIG Network's
// kube-network-policies: nftables rules send the first packets of connections to and from the
// node's pods that a policy selects to this process (nfqueue), which accepts or drops them.
//
// Upstream's own command only runs in a cluster (in-cluster config, a fixed table name, and it
// ends on SIGINT alone, leaving its rules to drop traffic); this one takes a kubeconfig, a table
// and queue of the node's own (several nodes may run side by side), and removes its table on
// SIGTERM. It is built by hack/controlplane.sh in a module of its own, so its dependencies never
// enter slipway's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "networkpolicy:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the control plane")
	node := flag.String("node", "", "name of the Node whose pods are enforced")
	table := flag.String("table", "slipway-network-policies", "nftables table (inet family) of this node")
	queue := flag.Int("queue-id", 100, "nfqueue number of this node")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *node == "" {
		return fmt.Errorf("--kubeconfig and --node are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			NodeName:            *node,
			NFTableName:         *table,
			QueueID:             *queue,
			NetfilterBug1766Fix: true,
			// NRI (the runtime telling a pod's address before the API server has it) is left
			// on although containerd 1.6 has none: with it off, v0.8.0 dereferences its nil NRI
			// plugin for any address that is not a known pod's. The plugin fails to connect,
			// says so once, and answers that it knows no pod.
		})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	// Run returns once ctx ends, after deleting its nftables table.
	return controller.Run(ctx)
}
