// Package plan answers the inverse questions of memory estimation: does a
// job fit on a GPU, what is the largest micro-batch or the longest
// sequence that fits, how many GPUs does it need, and which training
// layouts fit a GPU budget, best first.
//
// Every search takes the estimator as an [EstimateFunc], so it works with
// any model of memory: [For] binds [memory.Estimate] to a model, and the
// tests use synthetic estimators whose answers are known in closed form.
//
// # GPUs in jobs
//
// The estimator reads no GPU catalog: package memory stays free of the
// catalog's dependencies. [OnGPU] is the one place a catalog board
// ([gpu.GPU]) becomes job fields — the catalog name, the compute
// capability (PyTorch's cuBLAS workspace grows from sm90 on) and the
// total CUDA reports — and [ResolveGPU] looks the job's GPU name up first,
// keeping a memory size the user gave. Every front end (the CLI, the
// HTTP API, calibration, the accuracy records) goes through them, so an
// H20, an MI300X or a board from a user's catalog file is seen the same
// way everywhere.
//
// # Feasibility
//
// [Check] compares a result with the GPU's memory as the driver reports
// it ([gpu.GPU]). By default it decides on the upper edge of the band of
// the device peak (what nvidia-smi shows for the process: allocated
// tensors, allocator cache, CUDA context and library workspaces), the
// highest peak the estimate's known uncertainties allow; a job whose
// Job.DecideOn is "point" decides on the device peak itself. A training
// job's loading phase counts too (memory.Loading): the larger of the
// two is compared. A job fits when that figure leaves [Headroom] (5 %)
// free, is tight inside the headroom (or when only the upper edge is
// above the memory), and does not fit when the device peak itself, or
// the loading peak, is above 100 %. Every [Fit] says which figure it
// decided on (DecidedOn, Phase) and carries the others. Searches
// ([MaxFit] and the layout search) keep a value only when it fits on the
// same figure.
//
// # Inverse search
//
// Memory grows monotonically with micro-batch and sequence length, and
// shrinks as sharded jobs spread over more GPUs. [MaxFit], [MaxBatch] and
// [MaxSeqLen] gallop (1, 2, 4, …) to the first value that does not fit and
// bisect below it; [MinGPUs] does the same over GPU counts in multiples of
// the model-parallel size. Each answer is checked in the tests against
// direct estimates: the value returned fits, one step larger does not.
//
// # Layout search
//
// [Search] enumerates a [Space] of training layouts — engine, ZeRO or
// FSDP sharding, TP, PP, CP, EP, micro-batch, activation checkpointing,
// offload and fine-tuning method — skips combinations no engine runs
// ([Layout.Valid]), estimates the rest, and ranks those that fit by
// [Score], a relative throughput per GPU whose formula is documented with
// its constants in score.go. Micro-batches are tried in increasing order
// and abandoned at the first that does not fit. An estimator error (an
// engine or combination not modelled yet) skips the layout and is counted
// under its message in [Plan.Skipped].
package plan
