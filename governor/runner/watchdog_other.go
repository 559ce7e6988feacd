//go:build !linux

package runner

import "errors"

func killMarked(id string) (int, error) { return 0, errors.ErrUnsupported }
