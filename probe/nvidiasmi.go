package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// ErrNoNvidiaSMI reports that nvidia-smi is not on PATH.
var ErrNoNvidiaSMI = errors.New("nvidia-smi not found on PATH: install the NVIDIA driver (it ships nvidia-smi) or run on a GPU host")

// The two queries a sample runs. Memory is in MiB with nounits
// (nvidia-smi --help-query-gpu, --help-query-compute-apps).
var (
	queryApps = []string{"--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits"}
	queryGPUs = []string{"--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader,nounits"}
)

// maxSMIOutput bounds what one nvidia-smi call may print (a host with
// thousands of GPU processes stays far below it).
const maxSMIOutput = 4 << 20

// NvidiaSMI samples GPU memory by running nvidia-smi.
type NvidiaSMI struct {
	// Path is the nvidia-smi executable; empty means look it up on PATH.
	Path string
}

// Sample runs the GPU and compute-apps queries and parses them.
func (n NvidiaSMI) Sample(ctx context.Context) (Snapshot, error) {
	path := n.Path
	if path == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return Snapshot{}, ErrNoNvidiaSMI
		}
		path = p
	}
	gpuOut, err := runSMI(ctx, path, queryGPUs)
	if err != nil {
		return Snapshot{}, err
	}
	gpus, err := ParseGPUs(gpuOut)
	if err != nil {
		return Snapshot{}, err
	}
	appOut, err := runSMI(ctx, path, queryApps)
	if err != nil {
		return Snapshot{}, err
	}
	procs, err := ParseComputeApps(appOut)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{GPUs: gpus, Processes: procs}, nil
}

func runSMI(ctx context.Context, path string, args []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = &limitedBuffer{buf: &stdout, max: maxSMIOutput}
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String() + " " + stdout.String())
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, fmt.Errorf("nvidia-smi %s: %w: %s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// ParseGPUs parses the output of
// nvidia-smi --query-gpu=index,uuid,memory.used,memory.total --format=csv,noheader,nounits.
func ParseGPUs(out []byte) ([]GPU, error) {
	var gpus []GPU
	err := eachCSVLine(out, 4, "--query-gpu", func(line int, f []string) error {
		idx, err := strconv.Atoi(f[0])
		if err != nil || idx < 0 {
			return fmt.Errorf("index %q: want a GPU index", f[0])
		}
		if f[1] == "" {
			return errors.New("empty uuid")
		}
		used, err := parseMiB("memory.used", f[2])
		if err != nil {
			return err
		}
		total, err := parseMiB("memory.total", f[3])
		if err != nil {
			return err
		}
		gpus = append(gpus, GPU{Index: idx, UUID: f[1], Used: used, Total: total})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(gpus) == 0 {
		return nil, errors.New("nvidia-smi --query-gpu: no GPUs listed")
	}
	return gpus, nil
}

// ParseComputeApps parses the output of
// nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits.
// Empty output means no process holds GPU memory.
func ParseComputeApps(out []byte) ([]Process, error) {
	var procs []Process
	err := eachCSVLine(out, 3, "--query-compute-apps", func(line int, f []string) error {
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			return fmt.Errorf("pid %q: want a process id", f[0])
		}
		used, err := parseMiB("used_memory", f[1])
		if err != nil {
			return err
		}
		if f[2] == "" {
			return errors.New("empty gpu_uuid")
		}
		procs = append(procs, Process{PID: pid, Used: used, GPUUUID: f[2]})
		return nil
	})
	return procs, err
}

// eachCSVLine splits nvidia-smi CSV output into trimmed fields, checks the
// field count and calls fn per non-empty line; errors name the query and line.
func eachCSVLine(out []byte, fields int, query string, fn func(line int, f []string) error) error {
	for i, raw := range strings.Split(string(out), "\n") {
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "No running") {
			// Older drivers print a sentence instead of nothing.
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != fields {
			return fmt.Errorf("nvidia-smi %s line %d %q: want %d comma-separated fields, got %d", query, i+1, clip(text), fields, len(f))
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		if err := fn(i+1, f); err != nil {
			return fmt.Errorf("nvidia-smi %s line %d %q: %w", query, i+1, clip(text), err)
		}
	}
	return nil
}

// parseMiB reads a nounits memory field, a whole number of MiB.
func parseMiB(name, s string) (units.Bytes, error) {
	if strings.HasPrefix(s, "[") {
		// "[N/A]", "[Not Supported]", "[Insufficient Permissions]".
		return 0, fmt.Errorf("%s is %s: this driver does not report per-process memory here (try --all-processes)", name, s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s %q: want a whole number of MiB", name, s)
	}
	if v > int64(units.MaxBytes/units.MiB) {
		return 0, fmt.Errorf("%s %q: too large", name, s)
	}
	return units.Bytes(v) * units.MiB, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
