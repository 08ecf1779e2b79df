// Package plot draws memory estimates: line charts of per-GPU memory
// against sequence length or batch size, with GPU limits as horizontal
// lines, as SVG or PNG ([MemoryVsSeqLen], [MemoryVsBatch], drawn with
// github.com/go-analyze/charts/chartdraw), and a stacked bar of a result's
// components for the terminal ([Breakdown]) in Unicode blocks or plain
// ASCII.
//
// Charts have a fixed size and use the library's embedded Roboto font, so
// the same input gives the same bytes; the golden tests rely on it. The
// library reads its font when the first chart is drawn, so a program that
// links this package but draws nothing pays nothing at start-up: gonum/plot,
// used before, parsed twelve fonts in its package initialiser, about a
// quarter of every gpumem command's instructions.
package plot
