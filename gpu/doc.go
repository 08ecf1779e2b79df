// Package gpu is the catalog of accelerators gpumem plans for: usable
// memory as the driver reports it, architecture generation and native
// number formats.
//
// # Memory figures
//
// [GPU.Memory] is the total the driver tool prints for one device —
// nvidia-smi's "Total" in MiB, rocm-smi's "VRAM Total Memory" in bytes,
// hl-smi's memory.total — not the marketing size: an "80 GB" H100 shows
// 81559 MiB (79.65 GiB), an "80 GB" A100 81920 MiB. Every entry carries a
// MemorySource saying where its figure comes from or how it was derived.
// Boards with GDDR memory (A10, L4, L40S, T4) lose about 6 % to ECC, which
// data-center drivers enable by default; the catalog lists the ECC-on
// figure. Drivers older than R525 reported somewhat smaller totals for
// some boards; the source notes say by how much.
//
// Recent drivers keep a few hundred MiB of that total for themselves:
// CUDA (torch.cuda.mem_get_info, PyTorch's out-of-memory message) reports
// 79.19 GiB on an H100 whose nvidia-smi total is 79.65 GiB. Where a log
// shows that figure, [GPU.CUDAMemory] holds it with its source;
// [GPU.CUDATotal] falls back to Memory otherwise. Estimators that size a
// budget from the CUDA total (vLLM's gpu_memory_utilization) get it.
//
// # Lookup
//
// [Lookup] accepts catalog names ("H100-SXM"), aliases ("h100",
// "a100-80g", "4090") and the product names nvidia-smi prints ("NVIDIA
// H100 80GB HBM3"), ignoring case, punctuation and vendor words. A partial
// name that matches boards of different memory sizes ("a100", "v100") is
// rejected with [ErrAmbiguous] rather than guessed.
//
// # Jobs
//
// Estimates see a board through the job: plan.OnGPU copies its name,
// compute capability ([GPU.SM]) and CUDA total into a memory.Job, and
// plan.ResolveGPU does so for the name a job gives. [Filter] narrows a
// listing by text, and [Catalog.Select] turns the GPU names and memory
// size a planning command takes into the boards it checks.
//
// # User catalogs
//
// [LoadFile] merges a JSON or YAML file in the format of the embedded
// gpus.json over the built-ins, so a site can add its own boards or
// correct a figure measured on its driver version:
//
//	gpus:
//	  - name: A100-MIG-2g.20gb
//	    vendor: nvidia
//	    memory_mib: 19968
//	    arch: ampere
//	    compute_capability: "8.0"
//	    bf16: true
//	    aliases: [mig-2g]
//	    memory_source: nvidia-smi on a 2g.20gb MIG slice of our A100-80GB nodes
//
// [LoadDataTypes] reads custom storage formats (name → bytes per
// parameter) from a data_types.json file.
package gpu
