package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests of what a Redis client does when its own process is frozen or
// starved of CPU run the client in processes of their own. This file gives
// them the tools redis-server processes get: a child tied to the test
// binary's lifetime, frozen and resumed with job-control signals, and held
// to a CPU quota where the machine allows it.

// StartProcess starts cmd so that, on Linux, it dies with the test binary
// (see spawn_linux.go), as every redis-server does. It replaces
// cmd.SysProcAttr. The caller still stops it in t.Cleanup.
func StartProcess(cmd *exec.Cmd) error {
	return startProcess(cmd)
}

// PauseProcess freezes p (SIGSTOP), as Server.Pause freezes a server.
func PauseProcess(p *os.Process) error { return p.Signal(signalPause) }

// ResumeProcess continues p after PauseProcess (SIGCONT).
func ResumeProcess(p *os.Process) error { return p.Signal(signalResume) }

// CPUQuota is a cgroup of its own that holds the processes added to it to
// quota of CPU time per period, all threads together: the CFS bandwidth
// control behind container CPU limits. A process that has used its quota
// is not scheduled again before the next period starts, however idle the
// machine, so a busy Go program in it sees its timers and replies late by
// up to period-quota, as a throttled container does.
type CPUQuota struct {
	dir string
	v2  bool
}

// cgroupRoot is where the cgroup filesystems are usually mounted; the
// mounts are read from /proc/self/mounts, this only names the candidates
// in messages.
const cgroupRoot = "/sys/fs/cgroup"

// NewCPUQuota creates the cgroup, removed by t.Cleanup once its processes
// are gone (so create it before starting them, and stop them in a cleanup
// registered later). It returns an error saying exactly why when this
// machine does not let the test do so: not root, no cgroup filesystem with
// the cpu controller, or a write refused (a container without the rights,
// for instance).
func NewCPUQuota(t testing.TB, quota, period time.Duration) (*CPUQuota, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("setting a CPU quota needs root to write cgroup files; this test runs as uid %d", os.Geteuid())
	}
	if quota <= 0 || period < time.Millisecond || period > time.Second {
		return nil, fmt.Errorf("CPU quota %v per %v: cgroups take a period of 1ms to 1s and a positive quota", quota, period)
	}
	parent, v2, err := cpuCgroupMount()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("redistest-%d-%d", os.Getpid(), time.Now().UnixNano())
	q := &CPUQuota{dir: filepath.Join(parent, name), v2: v2}
	if err := os.Mkdir(q.dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating a cgroup for the CPU quota: %w", err)
	}
	t.Cleanup(func() {
		if err := q.remove(); err != nil {
			t.Errorf("redistest: removing cgroup %s: %v", q.dir, err)
		}
	})
	quotaUS, periodUS := quota.Microseconds(), period.Microseconds()
	if v2 {
		err = q.write("cpu.max", fmt.Sprintf("%d %d", quotaUS, periodUS))
	} else if err = q.write("cpu.cfs_period_us", strconv.FormatInt(periodUS, 10)); err == nil {
		err = q.write("cpu.cfs_quota_us", strconv.FormatInt(quotaUS, 10))
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

// cpuCgroupMount finds a mounted cgroup hierarchy with the cpu controller:
// a cgroup v1 one with the cpu option, or the cgroup v2 one if it offers
// cpu (which is then enabled for its children).
func cpuCgroupMount() (dir string, v2 bool, err error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", false, fmt.Errorf("cannot read the mounts to find the cgroup filesystems: %w", err)
	}
	defer f.Close()
	var unified []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		switch fields[2] {
		case "cgroup":
			for _, opt := range strings.Split(fields[3], ",") {
				if opt == "cpu" {
					return fields[1], false, nil
				}
			}
		case "cgroup2":
			unified = append(unified, fields[1])
		}
	}
	var why []string
	for _, dir := range unified {
		controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if !strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " cpu ") {
			why = append(why, fmt.Sprintf("the cgroup v2 hierarchy at %s offers no cpu controller (cgroup.controllers: %q)", dir, strings.TrimSpace(string(controllers))))
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			why = append(why, fmt.Sprintf("cannot enable the cpu controller for children of %s: %v", dir, err))
			continue
		}
		return dir, true, nil
	}
	if len(unified) == 0 {
		why = append(why, "no cgroup v1 hierarchy with the cpu controller and no cgroup v2 hierarchy is mounted (see /proc/self/mounts, usually under "+cgroupRoot+")")
	}
	return "", false, errors.New(strings.Join(why, "; "))
}

// write writes value to the cgroup's file name.
func (q *CPUQuota) write(name, value string) error {
	if err := os.WriteFile(filepath.Join(q.dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("setting the CPU quota: writing %q to %s: %w", value, filepath.Join(q.dir, name), err)
	}
	return nil
}

// Add moves the process pid, all its threads, into the cgroup. Threads it
// starts afterwards stay there too.
func (q *CPUQuota) Add(pid int) error {
	return q.write("cgroup.procs", strconv.Itoa(pid))
}

// Throttled reports, from the cgroup's cpu.stat, how many periods have
// elapsed while its processes wanted to run and in how many of them they
// were stopped for having used their quota: a test's proof that the quota
// bit.
func (q *CPUQuota) Throttled() (periods, throttled int64, err error) {
	b, err := os.ReadFile(filepath.Join(q.dir, "cpu.stat"))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled, nil
}

// remove deletes the cgroup, waiting for processes that are still exiting
// to leave it.
func (q *CPUQuota) remove() error {
	return poll(stopTimeout, func() error {
		err := os.Remove(q.dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}
