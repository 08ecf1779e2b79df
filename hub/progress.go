package hub

// Progress receives progress of operations that take more than a moment
// (downloads, reading many shard headers). The CLI decides how to show
// it: a bar on a terminal, nothing when the output is piped.
// Implementations must be safe for concurrent use.
type Progress interface {
	// Update reports that done of total units of task are complete
	// (bytes for a download, files for a set of headers); total <= 0
	// means unknown. done == total marks the end of the task.
	Update(task string, done, total int64)
}

// ProgressFunc adapts a function to [Progress].
type ProgressFunc func(task string, done, total int64)

// Update calls f.
func (f ProgressFunc) Update(task string, done, total int64) { f(task, done, total) }

type nopProgress struct{}

func (nopProgress) Update(string, int64, int64) {}
