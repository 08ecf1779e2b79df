package probe

import (
	"bytes"
	"fmt"
	"io/fs"
	"strconv"
)

// ProcessTree returns root and all its descendants, read from a procfs
// (os.DirFS("/proc") on Linux). Processes that vanish while the tree is
// read are skipped; a procfs that cannot be listed is an error.
func ProcessTree(proc fs.FS, root int) (map[int]bool, error) {
	entries, err := fs.ReadDir(proc, ".")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		stat, err := fs.ReadFile(proc, e.Name()+"/stat")
		if err != nil {
			continue // exited since the listing
		}
		ppid, ok := parentPID(stat)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	tree := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !tree[c] {
				tree[c] = true
				queue = append(queue, c)
			}
		}
	}
	return tree, nil
}

// parentPID reads the fourth field of /proc/<pid>/stat. The second field
// (the command name in parentheses) may itself contain spaces and ")", so
// fields are counted after its last ")" (proc(5)).
func parentPID(stat []byte) (int, bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[end+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil || ppid < 0 {
		return 0, false
	}
	return ppid, true
}
