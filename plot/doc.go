// Package plot draws memory estimates: line charts of per-GPU memory
// against sequence length or batch size, with GPU limits as horizontal
// lines, as SVG or PNG ([MemoryVsSeqLen], [MemoryVsBatch], drawn with
// gonum.org/v1/plot), and a stacked bar of a result's components for the
// terminal ([Breakdown]) in Unicode blocks or plain ASCII.
//
// Charts have a fixed size and use gonum's built-in Liberation fonts, so
// the same input gives the same bytes; the golden tests rely on it.
package plot
