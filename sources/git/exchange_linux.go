package git

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the paths a and b at once (renameat2 with RENAME_EXCHANGE); it is
// errors.ErrUnsupported where the kernel or the filesystem cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return errors.ErrUnsupported
	}
	return err
}
