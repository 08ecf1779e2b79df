package jobfile_test

import (
	"fmt"

	"github.com/gpumem/gpumem/jobfile"
)

func ExampleParse() {
	f, err := jobfile.Parse([]byte(`
model: llama3-8b
method: lora
seq_len: 4096
grad_checkpoint: true
gpu_memory: 80GiB
`), "job.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Model, f.Job.Method, f.Job.SeqLen, f.Job.GradCheckpoint, f.Job.GPUMemory)
	fmt.Println(f.Keys)

	_, err = jobfile.Parse([]byte(`{"model": "llama3-8b", "seqlen": 4096, "zero": 4}`), "bad.json")
	fmt.Println(err)
	// Output:
	// llama3-8b lora 4096 full 80.00 GiB
	// [gpu_memory_bytes grad_checkpoint method seq_len]
	// bad.json: 2 problems:
	//   seqlen: unknown key (did you mean "seq_len"?)
	//   zero: want 0 to 3, got 4
}

func ExampleShape_Model() {
	m, note, err := jobfile.Shape{Name: "my-7b", Params: 7_000_000_000}.Model()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.ID, m.Text.Layers, m.Text.Hidden)
	fmt.Println(note)
	// Output:
	// my-7b 33 4096
	// model shape assumed (no config.json): 33 layers, hidden 4096, 32 heads (32 KV), FFN 11264, vocab 32000; 7.04B parameters (stated 7.00B, +0.6%)
}
