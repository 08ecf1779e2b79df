package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// ParamsReport is the JSON form of `gpumem params`.
type ParamsReport struct {
	Model        string `json:"model"`
	Architecture string `json:"architecture"`
	ModelType    string `json:"model_type"`
	TotalParams  int64  `json:"total_params"`
	// TrainableParams is what full fine-tuning trains: every parameter.
	TrainableParams int64 `json:"trainable_params"`
	// ActiveParams is the count used per token (MoE); the total for dense models.
	ActiveParams int64          `json:"active_params"`
	Components   []ParamsRow    `json:"components"`
	Modules      []model.Module `json:"modules"`
	Warnings     []string       `json:"warnings,omitempty"`
}

// ParamsRow is a named parameter count.
type ParamsRow struct {
	Name   string `json:"name"`
	Params int64  `json:"params"`
}

// NewParamsReport summarises m's parameter inventory.
func NewParamsReport(m *model.Model) ParamsReport {
	r := ParamsReport{
		Model:        m.ID,
		Architecture: m.Architecture,
		ModelType:    m.ModelType,
		TotalParams:  m.TotalParams(),
		ActiveParams: m.ActiveParams(),
		Modules:      m.Modules,
		Warnings:     m.Warnings,
	}
	r.TrainableParams = r.TotalParams
	idx := map[string]int{}
	for _, mod := range m.Modules {
		name := mod.Component
		if mod.Stack != "" && mod.Stack != "text" && mod.Stack != name {
			name = mod.Stack + "." + mod.Component
		}
		i, ok := idx[name]
		if !ok {
			i = len(r.Components)
			idx[name] = i
			r.Components = append(r.Components, ParamsRow{Name: name})
		}
		r.Components[i].Params += mod.Params
	}
	return r
}

// Params renders a parameter report.
func Params(w io.Writer, r ParamsReport, o Options) error {
	if o.Format == JSON {
		return WriteJSON(w, r)
	}
	pct := func(n int64) string {
		if r.TotalParams == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(r.TotalParams))
	}
	t := &TableData{
		Title:   fmt.Sprintf("%s (%s) — parameters by component", r.Model, r.Architecture),
		Headers: []string{"component", "params", "exact", "share"},
		Aligns:  []Align{Left, Right, Right, Right},
	}
	for _, c := range r.Components {
		t.AddRow(c.Name, units.Params(c.Params).String(), strconv.FormatInt(c.Params, 10), pct(c.Params))
	}
	t.AddFooter("total", units.Params(r.TotalParams).String(), strconv.FormatInt(r.TotalParams, 10), pct(r.TotalParams))
	if r.ActiveParams != r.TotalParams {
		t.AddFooter("active per token", units.Params(r.ActiveParams).String(), strconv.FormatInt(r.ActiveParams, 10), pct(r.ActiveParams))
	}
	if err := t.Render(w, o.Format); err != nil {
		return err
	}
	m := &TableData{
		Title:   "\nmodules",
		Headers: []string{"module", "shape", "instances", "params"},
		Aligns:  []Align{Left, Left, Right, Right},
	}
	for _, mod := range r.Modules {
		shape := ""
		if mod.In > 0 || mod.Out > 0 {
			shape = fmt.Sprintf("%d→%d", mod.In, mod.Out)
			if mod.Bias {
				shape += " +bias"
			}
		}
		m.AddRow(mod.Name, shape, strconv.Itoa(mod.Instances), strconv.FormatInt(mod.Params, 10))
	}
	if o.Format == Markdown {
		fmt.Fprintln(w)
	}
	if err := m.Render(w, o.Format); err != nil {
		return err
	}
	return writeWarnings(w, r.Warnings)
}

func writeWarnings(w io.Writer, ws []string) error {
	for _, s := range ws {
		if _, err := fmt.Fprintf(w, "warning: %s\n", s); err != nil {
			return err
		}
	}
	return nil
}
