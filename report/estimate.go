package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Estimate renders a memory estimate: the breakdown, the three peaks and
// the phases. JSON output is the memory.Result itself.
func Estimate(w io.Writer, r memory.Result, o Options) error {
	if o.Format == JSON {
		return WriteJSON(w, r)
	}
	p := r.PerGPU
	title := fmt.Sprintf("%s (%s) — %s", r.Model, r.Architecture, jobSummary(r.Job))
	// A component larger in another phase than at the peak gets a
	// "largest elsewhere" cell, so a 0 B row at the peak is not read as
	// "never allocated".
	elsewhere := false
	for _, c := range p.Components {
		elsewhere = elsewhere || c.MaxBytes > c.Bytes
	}
	t := &TableData{
		Title:   title,
		Headers: []string{"component", "size", "share", "counted in", "phase"},
		Aligns:  []Align{Left, Right, Right, Left, Left},
	}
	if elsewhere {
		t.Headers = append(t.Headers, "largest elsewhere")
		t.Aligns = append(t.Aligns, Left)
	}
	row := func(cells ...string) []string {
		if elsewhere && len(cells) < len(t.Headers) {
			cells = append(cells, "")
		}
		return cells
	}
	for _, c := range p.Components {
		cells := row(c.Name, o.Bytes(c.Bytes), share(c.Bytes, p.DevicePeakBytes), c.Level, c.Phase)
		if elsewhere && c.MaxBytes > c.Bytes {
			cells[len(cells)-1] = o.Bytes(c.MaxBytes) + " at " + c.MaxPhase
		}
		t.AddRow(cells...)
	}
	t.AddFooter(row("allocated peak", o.Bytes(p.AllocatedPeakBytes), share(p.AllocatedPeakBytes, p.DevicePeakBytes), "torch max_memory_allocated", p.PeakPhase)...)
	t.AddFooter(row("reserved peak", o.Bytes(p.ReservedPeakBytes), share(p.ReservedPeakBytes, p.DevicePeakBytes), "torch max_memory_reserved", "")...)
	t.AddFooter(row("device peak", o.Bytes(p.DevicePeakBytes), "100.0%", "nvidia-smi", "")...)
	if err := t.Render(w, o.Format); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nparameters: %s total, %s trainable", units.Params(r.TotalParams), units.Params(r.TrainableParams))
	if r.ActiveParams > 0 && r.ActiveParams != r.TotalParams {
		fmt.Fprintf(&b, ", %s active per token", units.Params(r.ActiveParams))
	}
	b.WriteString("\n")
	if bd := p.Band; bd != nil && bd.ExpectedBytes > 0 {
		fmt.Fprintf(&b, "band (device peak): %s – %s (−%.1f%% / +%.1f%%)", o.Bytes(bd.LowBytes), o.Bytes(bd.HighBytes),
			100*float64(bd.ExpectedBytes-bd.LowBytes)/float64(bd.ExpectedBytes), 100*float64(bd.HighBytes-bd.ExpectedBytes)/float64(bd.ExpectedBytes))
		for i, t := range bd.Terms {
			sep := "; "
			if i == 0 {
				sep = " from "
			}
			fmt.Fprintf(&b, "%s%s −%s/+%s", sep, t.Name, o.Bytes(t.DownBytes), o.Bytes(t.UpBytes))
		}
		b.WriteString("\n")
	}
	if len(p.Phases) > 0 {
		b.WriteString("phases (allocated):")
		for _, ph := range p.Phases {
			mark := ""
			if ph.Name == p.PeakPhase {
				mark = " (peak)"
			}
			fmt.Fprintf(&b, " %s %s%s;", ph.Name, o.Bytes(ph.Bytes), mark)
		}
		b.WriteString("\n")
	}
	if sv := r.Serving; sv != nil && sv.SGLang != nil {
		sglangSummary(&b, sv, o)
	} else if sv != nil {
		fmt.Fprintf(&b, "serving (vLLM budget): %.2f × %s = %s requested; weights %s, profiled activations %s, non-torch %s\n",
			sv.GPUMemoryUtilization, o.Bytes(sv.GPUMemoryBytes), o.Bytes(sv.RequestedBytes), o.Bytes(sv.WeightsBytes),
			o.Bytes(sv.ActivationPeakBytes), o.Bytes(sv.NonTorchBytes))
		if sv.RecurrentStateBytesPerSeq > 0 {
			fmt.Fprintf(&b, "KV pool: %s shared by attention and recurrent state: %d pages per layer group, attention blocks of %d tokens = %d tokens (%d B per token); %d B of recurrent state per sequence\n",
				o.Bytes(sv.KVPoolBytes), sv.KVBlocks, sv.BlockSize, sv.KVTokens, sv.KVBytesPerToken, sv.RecurrentStateBytesPerSeq)
		} else {
			fmt.Fprintf(&b, "KV pool: %s = %d blocks of %d tokens = %d tokens (%d B per token)\n",
				o.Bytes(sv.KVPoolBytes), sv.KVBlocks, sv.BlockSize, sv.KVTokens, sv.KVBytesPerToken)
		}
		fmt.Fprintf(&b, "concurrent sequences of %d tokens: %d", sv.SeqLen, sv.MaxConcurrentSeqs)
		if sv.MaxModelLen > 0 {
			verdict := "fits"
			if !sv.MaxModelLenFits {
				verdict = "does NOT fit: the engine would refuse to start"
			}
			fmt.Fprintf(&b, "; one sequence of --max-model-len %d %s", sv.MaxModelLen, verdict)
		}
		b.WriteString("\n")
	}
	if r.Host != nil {
		fmt.Fprintf(&b, "host memory for offload, per node: %s CPU RAM", o.Bytes(r.Host.CPUBytes))
		if r.Host.GPUsPerNode > 0 {
			fmt.Fprintf(&b, " (for its %d GPUs)", r.Host.GPUsPerNode)
		}
		if r.Host.NVMeBytes > 0 {
			fmt.Fprintf(&b, ", %s NVMe", o.Bytes(r.Host.NVMeBytes))
		}
		b.WriteString("\n")
	}
	if pl := r.Parallel; pl != nil {
		fmt.Fprintf(&b, "layout: %s on %d GPUs: dp %d × tp %d × pp %d × cp %d, ep %d", pl.Engine, pl.World, pl.DP, pl.TP, pl.PP, pl.CP, pl.EP)
		if pl.ZeRO > 0 {
			fmt.Fprintf(&b, "; states sharded %d ways (ZeRO-%d equivalent)", pl.ShardGroup, pl.ZeRO)
		} else {
			b.WriteString("; model states replicated across data-parallel ranks")
		}
		if pl.LargestUnitParams > 0 {
			fmt.Fprintf(&b, "; largest gathered unit %s params", units.Params(pl.LargestUnitParams))
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(r.Stages) > 1 {
		if err := stages(w, r, o); err != nil {
			return err
		}
	}
	if o.Explain {
		if err := explain(w, p.Components, o); err != nil {
			return err
		}
	}
	return writeWarnings(w, r.Warnings)
}

// sglangSummary writes an SGLang deployment in the words of SGLang's
// startup log.
func sglangSummary(b *strings.Builder, sv *memory.ServingResult, o Options) {
	g := sv.SGLang
	how := "given"
	if g.MemFractionDerived {
		how = "SGLang's default"
	}
	fmt.Fprintf(b, "serving (SGLang %s): mem_fraction_static %.3f (%s) of %s free at startup = weights %s + KV pool %s; %s left for activations, CUDA graphs and request pools (needs about %s)\n",
		g.Version, g.MemFractionStatic, how, o.Bytes(g.FreeAtStartBytes), o.Bytes(sv.WeightsBytes), o.Bytes(sv.KVPoolBytes),
		o.Bytes(g.ReserveBytes), o.Bytes(g.ReserveNeededBytes))
	fmt.Fprintf(b, "KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB (SGLang's GB are GiB; %d B per token)\n",
		g.MaxTotalNumTokens, g.KCacheBytes.GiBf(), g.VCacheBytes.GiBf(), sv.KVBytesPerToken)
	fmt.Fprintf(b, "max_total_num_tokens=%d, chunked_prefill_size=%d, max_running_requests=%d, context_len=%d\n",
		g.MaxTotalNumTokens, g.ChunkedPrefillSize, g.MaxRunningRequests, g.ContextLen)
	fmt.Fprintf(b, "concurrent sequences of %d tokens: %d (at most max_running_requests; shared prefixes in the radix cache take no more room)", sv.SeqLen, sv.MaxConcurrentSeqs)
	if g.MaxReqLen < int64(g.ContextLen)-1 {
		fmt.Fprintf(b, "; requests longer than %d tokens are refused", g.MaxReqLen)
	}
	b.WriteString("\n")
}

func explain(w io.Writer, cs []memory.Component, o Options) error {
	var b strings.Builder
	b.WriteString("\nhow each component was computed:\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "- %s = %s\n", c.Name, o.Bytes(c.Bytes))
		if c.Formula != "" {
			fmt.Fprintf(&b, "    %s\n", c.Formula)
		}
		if c.Source != "" {
			fmt.Fprintf(&b, "    source: %s\n", c.Source)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func share(part, whole units.Bytes) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// jobSummary is a one-line description of a job for table titles.
func jobSummary(j memory.Job) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	mode := string(j.Mode)
	if mode == "" {
		mode = string(memory.Train)
	}
	parts = append(parts, mode)
	if j.Method != "" && j.Method != "full" {
		parts = append(parts, j.Method)
	}
	if j.Dtype != "" {
		parts = append(parts, j.Dtype)
	}
	if mode == string(memory.Train) {
		if j.MicroBatch > 0 {
			add("batch %d", j.MicroBatch)
		}
		if j.SeqLen > 0 {
			add("seq %d", j.SeqLen)
		}
		if j.Optimizer != "" {
			parts = append(parts, j.Optimizer)
		}
		if j.GradCheckpoint != "" && j.GradCheckpoint != "none" {
			add("checkpointing %s", j.GradCheckpoint)
		}
	} else {
		if j.Batch > 0 {
			add("batch %d", j.Batch)
		}
		if j.PromptLen > 0 || j.GenLen > 0 {
			add("prompt %d + gen %d", j.PromptLen, j.GenLen)
		} else if j.SeqLen > 0 {
			add("seq %d", j.SeqLen)
		}
	}
	if j.NumGPUs > 1 {
		add("%d GPUs", j.NumGPUs)
	}
	if j.Engine != "" {
		parts = append(parts, j.Engine)
	}
	return strings.Join(parts, ", ")
}

// stages renders one row per pipeline stage; the breakdown above is the
// most loaded stage's.
func stages(w io.Writer, r memory.Result, o Options) error {
	t := &TableData{
		Title:   "\npipeline stages (the breakdown above is the most loaded one)",
		Headers: []string{"stage", "layers", "in flight", "holds", "allocated", "reserved", "device"},
		Aligns:  []Align{Right, Left, Right, Left, Right, Right, Right},
	}
	peak := -1
	if r.Parallel != nil {
		peak = r.Parallel.PeakStage
	}
	for _, st := range r.Stages {
		var holds []string
		if st.Embedding {
			holds = append(holds, "embedding")
		}
		if st.OutputLayer {
			holds = append(holds, "head + loss")
		}
		name := fmt.Sprintf("%d", st.Stage)
		if st.Stage == peak {
			name += " (peak)"
		}
		t.AddRow(name, fmt.Sprintf("%d–%d", st.FirstLayer, st.FirstLayer+st.Layers-1), fmt.Sprintf("%g", st.InFlight),
			strings.Join(holds, ", "), o.Bytes(st.PerGPU.AllocatedPeakBytes), o.Bytes(st.PerGPU.ReservedPeakBytes), o.Bytes(st.PerGPU.DevicePeakBytes))
	}
	return t.Render(w, o.Format)
}
