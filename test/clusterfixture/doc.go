// Package clusterfixture is the small cluster that the tests of the read model (package
// cluster) and of the daemon's API and page read through a fake clientset: four nodes, two
// registered pools, six gpuctl jobs with their pods, and quotas, plus objects that are not
// gpuctl's. The builders make more of the same for a test's own cases.
//
//	kube := fake.NewClientset(clusterfixture.Objects()...)
package clusterfixture
