// Package multikueue holds the end-to-end test of a fleet under Kueue's MultiKueue: three local
// control planes (a manager, hub, and two workers, gpu-a and gpu-b), each with the real Kueue,
// synced from one repository with `gpuctl sync --local --cluster NAME`. A job committed to the
// manager is admitted there and runs in the worker that has room; gpuctl renders Kueue's
// objects (multiKueue in .gpuctl.yaml) and schedules nothing itself. The package has only
// tests.
package multikueue
