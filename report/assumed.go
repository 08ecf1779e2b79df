package report

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
)

// defaultWidth is the width assumption lines wrap at when the terminal's
// is unknown (output piped to a file).
const defaultWidth = 80

// Assumed returns the settings an estimate filled with defaults, as
// key=value in the order of the job's fields (the JSON's "assumed"), then
// the stack versions it assumed for the packages the job runs on
// (transformers=5.3.0, ...). It is empty when the job stated everything.
func Assumed(r memory.Result) []string {
	var out []string
	for _, k := range memory.JobKeys() {
		if !r.Assumed.Has(k.Name) {
			continue
		}
		out = append(out, k.Name+"="+valueText(k.Value(&r.Job)))
	}
	return append(out, assumedStack(r.Job)...)
}

// valueText writes a job value as a job file or query gives it.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		return strings.Join(x, ",")
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Int || rv.Kind() == reflect.Int64 {
		return strconv.FormatInt(rv.Int(), 10)
	}
	return fmt.Sprint(v)
}

// assumedStack lists the stack versions the job did not state, for the
// packages whose version rules can apply to it: torch always, then the
// libraries of its mode, method and engine.
func assumedStack(j memory.Job) []string {
	rs, err := memory.ResolveStack(j.Stack, j.Software)
	if err != nil {
		return nil
	}
	used := map[string]bool{"torch": true}
	switch j.Mode {
	case memory.Serving:
		used["vllm"] = true
	case memory.Inference:
		used[map[bool]string{true: "vllm", false: "transformers"}[strings.EqualFold(j.InferenceEngine, "vllm")]] = true
	default:
		switch strings.ToLower(j.Framework) {
		case memory.FrameworkTorchtitan:
			used["torchtitan"] = true
		case memory.FrameworkHF, "":
			used["transformers"] = true
		}
		switch strings.ToLower(j.Method) {
		case memory.MethodLoRA, memory.MethodQLoRA:
			used["peft"] = true
		}
		switch strings.ToLower(j.Engine) {
		case memory.EngineDeepSpeed:
			used["deepspeed"] = true
		case memory.EngineFSDP, memory.EngineFSDP2:
			used["accelerate"] = true
		}
	}
	if q := strings.ToLower(j.Dtype + " " + j.Optimizer); strings.Contains(q, "nf4") || strings.Contains(q, "fp4") ||
		strings.Contains(q, "int8") || strings.Contains(q, "8bit") || strings.Contains(q, "paged") {
		used["bitsandbytes"] = true
	}
	var out []string
	for _, v := range rs.Versions {
		if v.Assumed && used[v.Package] {
			out = append(out, v.Package+"="+v.Version)
		}
	}
	return out
}

// writeAssumed writes the "assumed:" line of an estimate, wrapped at the
// width of o (80 columns when unknown); nothing when nothing was assumed.
func writeAssumed(w io.Writer, r memory.Result, o Options) error {
	return WriteAssumedList(w, Assumed(r), o)
}

// WriteAssumedList writes items as an "assumed:" line, wrapped at the
// width of o (80 columns when unknown), as every table ends.
func WriteAssumedList(w io.Writer, items []string, o Options) error {
	if len(items) == 0 {
		return nil
	}
	_, err := io.WriteString(w, wrapList("assumed: ", items, o.Width))
	return err
}

// wrapList writes items after prefix, separated by ", ", breaking lines
// before width (defaultWidth when 0) and indenting continuation lines.
// An item longer than a line gets a line of its own.
func wrapList(prefix string, items []string, width int) string {
	if width <= 0 {
		width = defaultWidth
	}
	const indent = "  "
	var b strings.Builder
	b.WriteString(prefix)
	col := len(prefix)
	for i, it := range items {
		sep := ""
		if i < len(items)-1 {
			sep = ","
		}
		word := it + sep
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	b.WriteByte('\n')
	return b.String()
}

// VerdictLine is the one-line verdict of an estimate on a GPU: fits,
// tight or does not fit, the figure it decided on and what is left.
func VerdictLine(f plan.Fit, o Options) string {
	verdict := map[plan.Verdict]string{plan.Fits: "fits", plan.Tight: "tight", plan.DoesNotFit: "does NOT fit"}[f.Verdict]
	on := "the band's upper edge"
	if f.DecidedOn == memory.DecidePoint {
		on = "the estimate"
	}
	figure := fmt.Sprintf("%s (%s of the step)", o.Bytes(f.NeedBytes), on)
	if f.Phase == "loading" {
		figure = fmt.Sprintf("%s while the model loads", o.Bytes(f.NeedBytes))
	}
	s := fmt.Sprintf("verdict on %s (%s): %s — %s = %.1f %%", f.GPU, o.Bytes(f.GPUMemoryBytes), verdict, figure, f.Utilization)
	switch f.Verdict {
	case plan.Fits:
		s += fmt.Sprintf(", %s free", o.Bytes(f.FreeBytes))
	case plan.Tight:
		s += fmt.Sprintf(", more than %.0f %% of the memory: a run may run out", 100*(1-plan.Headroom))
	default:
		s += fmt.Sprintf(", %s short", o.Bytes(f.ShortBytes))
	}
	if f.Reason != "" {
		s += "; " + f.Reason
	}
	return s + "\n"
}
