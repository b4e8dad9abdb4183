package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of the CPU times in /proc/PID/stat: 100 on every
// architecture (the kernel converts its own tick to it for user space).
const clockTicks = 100

// processCPU is the CPU time, user and system, in nanoseconds, that a process (all its
// threads) has used, from /proc.
func processCPU(pid string) (int64, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	ticks, err := statTicks(stat)
	if err != nil {
		return 0, fmt.Errorf("process %s: %w", pid, err)
	}
	return ticks * int64(time.Second/clockTicks), nil
}

// statTicks is utime + stime of a /proc/PID/stat line, in clock ticks.
func statTicks(stat []byte) (int64, error) {
	// Field 2, the command, is in parentheses and may hold spaces and parentheses: the
	// fields after it follow its last ')'. f[0] is then field 3; utime and stime are 14, 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("stat has %d fields after the command", len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q", v)
		}
		ticks += n
	}
	return ticks, nil
}

// serverCPU is the CPU time the processes whose PIDs the files hold have used.
func serverCPU(pidFiles []string) (time.Duration, error) {
	n, err := sumOverPIDs(pidFiles, processCPU)
	return time.Duration(n), err
}
