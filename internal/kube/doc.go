// Package kube builds the client configuration of every gpuctl binary from the flags that
// kubectl uses: --kubeconfig and --context.
//
// The configuration is looked up as kubectl does (clientcmd's deferred loading): the file of
// --kubeconfig, else the files of $KUBECONFIG, else ~/.kube/config; when none holds a
// configuration and the binary runs in a pod (KUBERNETES_SERVICE_HOST and _PORT set, the
// service account's token mounted), the pod's service account is used. A kubeconfig file,
// when there is one, wins over the service account.
//
//	var ko kube.Options
//	ko.BindFlags(cmd.Flags())
//	...
//	cfg, err := ko.RESTConfig(kube.UserAgent("gpuctl"))
package kube
