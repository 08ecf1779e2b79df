package report_test

import (
	"fmt"
	"os"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

// ExampleParams prints the parameter count of a catalog model by
// component, as gpumem params does.
func ExampleParams() {
	m, err := model.Lookup("gpt2")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := report.NewParamsReport(m)
	fmt.Println(r.Model, r.TotalParams)
	for _, c := range r.Components {
		fmt.Printf("%s %d\n", c.Name, c.Params)
	}
	// Output:
	// openai-community/gpt2 124439808
	// embedding 39383808
	// norm 36864
	// attention 28348416
	// mlp 56669184
	// final_norm 1536
}

// ExampleTableData renders a small table as Markdown.
func ExampleTableData() {
	t := report.TableData{Headers: []string{"component", "size"}, Aligns: []report.Align{report.Left, report.Right}}
	o := report.Options{Units: report.SI}
	t.AddRow("weights", o.Bytes(16*units.GB))
	t.AddFooter("total", o.Bytes(16*units.GB))
	if err := t.Render(os.Stdout, report.Markdown); err != nil {
		fmt.Println(err)
	}
	// Output:
	// | component | size |
	// |---|---:|
	// | weights | 16.00 GB |
	// | **total** | **16.00 GB** |
}
