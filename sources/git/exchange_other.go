//go:build !linux

package git

import "errors"

// exchange is errors.ErrUnsupported: only Linux swaps two paths at once here.
func exchange(a, b string) error { return errors.ErrUnsupported }
