package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/modelref"
	"github.com/gpumem/gpumem/report"
)

// validation is the answer of gpumem validate, also its JSON form.
type validation struct {
	File     string            `json:"file"`
	Valid    bool              `json:"valid"`
	Layout   string            `json:"layout,omitempty"` // "job" or "engine-calculator"
	Model    string            `json:"model,omitempty"`
	Problems []jobfile.Problem `json:"problems"`
	Notes    []string          `json:"notes,omitempty"`
}

func newValidateCmd(f *Factory, g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "validate FILE",
		GroupID: "estimate",
		Short:   "Check a job file and report every problem at once",
		Long: `Check a job file (gpumem's layout or the engine calculators') without estimating it:
unknown keys (with the nearest known key), values of the wrong type, impossible values,
a model that cannot be found, and a job the estimators reject for this model. Every
problem is listed; the exit code is 1 if there is any.

A Hub id is checked against the local Hugging Face cache only: validate never uses
the network.`,
		Example: `  gpumem validate job.yaml
  gpumem validate llama2_7b_deepspeed.json --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := validateFile(cmd.Context(), f, args[0])
			if err := renderValidation(f, g, v); err != nil {
				return err
			}
			if !v.Valid {
				return &ExitCodeError{Code: ExitError}
			}
			return nil
		},
	}
}

// validateFile collects every problem of the file at path.
func validateFile(ctx context.Context, f *Factory, path string) validation {
	v := validation{File: path}
	jf, err := jobfile.Load(path)
	var je *jobfile.Error
	switch {
	case errors.As(err, &je):
		v.Problems = append(v.Problems, je.Problems...)
	case err != nil:
		v.Problems = append(v.Problems, jobfile.Problem{Message: err.Error()})
		return v
	}
	if jf == nil {
		return v
	}
	v.Layout = jf.Layout
	var m *model.Model
	if !jobfile.Mentions(v.Problems, "model") {
		var p []jobfile.Problem
		m, p = validateModel(ctx, f, jf)
		v.Problems = append(v.Problems, p...)
	}
	if m != nil {
		v.Model = m.ID
		if len(v.Problems) == 0 {
			if _, err := memory.Estimate(m, jf.Job); err != nil {
				v.Problems = append(v.Problems, jobfile.Problem{Message: "the estimators reject the job: " + err.Error()})
			}
		}
	}
	v.Notes = jf.Notes
	v.Valid = len(v.Problems) == 0
	return v
}

// validateModel resolves the file's model without the network.
func validateModel(ctx context.Context, f *Factory, jf *jobfile.File) (*model.Model, []jobfile.Problem) {
	switch {
	case jf.Shape != nil:
		m, note, err := jf.Shape.Model()
		if err != nil {
			return nil, []jobfile.Problem{{Key: "model", Message: err.Error()}}
		}
		jf.Notes = append(jf.Notes, note)
		return m, nil
	case jf.Model == "":
		return nil, []jobfile.Problem{jobfile.MissingModel()}
	}
	src, err := modelref.Resolve(ctx, jf.Model, modelref.Options{Hub: &lazyHub{f: f, ho: hubOptions{Offline: true}}, LocalPaths: true})
	switch {
	case err == nil:
		jf.Notes = append(jf.Notes, src.Notes...)
		return src.Model, nil
	case errors.Is(err, hub.ErrOffline):
		return nil, []jobfile.Problem{{Key: "model", Message: fmt.Sprintf("%q is not in the catalog or the local Hugging Face cache (validate does not use the network; gpumem params %s fetches it)", jf.Model, jf.Model)}}
	}
	// A name missing from the catalog names the closest one already
	// (model.Suggest).
	return nil, []jobfile.Problem{{Key: "model", Message: err.Error()}}
}

func renderValidation(f *Factory, g *globalOptions, v validation) error {
	ro := g.renderOptions(f)
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, v)
	}
	w := f.IO.Out
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if v.Valid {
		fmt.Fprintf(w, "%s: valid %s file (model %s)\n", v.File, v.Layout, v.Model)
		return nil
	}
	fmt.Fprintf(w, "%s: %d problem(s):\n", v.File, len(v.Problems))
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}
