package buildtags

import "context"

// Poller exists on Linux only, by its file name.
type Poller interface {
	//ratelimit:key=fd window=1s max=100
	Wait(ctx context.Context, fd int) error
}

// Sync flushes the disk.
//
//ratelimit:window=1s max=1
func (d *Disk) Sync(ctx context.Context) error { return nil }
