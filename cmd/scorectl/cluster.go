package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// clusterFlags are the flags a kubectl user expects.
type clusterFlags struct {
	kubeconfig, context, namespace string
	timeout                        time.Duration
}

func (f *clusterFlags) bind(cmd *cobra.Command, withTimeout bool) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.context, "context", "", "the kubeconfig context to use")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "the namespace (default: the context's namespace)")
	if withTimeout {
		cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait")
	}
}

// restConfig loads the kubeconfig and returns it with the namespace to use.
func (f *clusterFlags) restConfig() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := f.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", err
		}
	}
	return cfg, ns, nil
}

// connect returns a client (which can watch) and the namespace to use.
func (f *clusterFlags) connect() (client.WithWatch, string, error) {
	cfg, ns, err := f.restConfig()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := scorev1b1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	return c, ns, err
}

// workload connects and reads the named Workload.
func (f *clusterFlags) workload(ctx context.Context, name string) (client.WithWatch, *scorev1b1.Workload, error) {
	c, ns, err := f.connect()
	if err != nil {
		return nil, nil, err
	}
	w := &scorev1b1.Workload{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		return nil, nil, err
	}
	return c, w, nil
}
