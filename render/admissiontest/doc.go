// Package admissiontest checks the tenant pod policy's admission objects
// (render.AdmissionPolicy) against the local cluster's API server: what a team member's plain
// client is refused in a tenant namespace, what stays allowed (other namespaces, gpuctl's own
// rendered workloads and the pods their controllers create). It holds no code, only tests.
package admissiontest
