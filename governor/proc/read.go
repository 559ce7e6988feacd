package proc

import (
	"os"
	"syscall"
)

// ReadFile reads a /proc file whole, as os.ReadFile does, in three system
// calls or so (open, read until end, close). os.ReadFile also registers
// each descriptor with the runtime's poller and queries its flags: for a
// scan of every process on the machine that is most of the cost, and
// /proc files never block.
func ReadFile(path string) ([]byte, error) {
	fd, err := openRetry(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b, err := ReadFD(fd, 512)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// ReadFD reads fd until end of file; size is a guess of the length.
func ReadFD(fd, size int) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
