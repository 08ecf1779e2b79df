// Package plot draws memory estimates: line charts of per-GPU memory
// against sequence length or batch size, with GPU limits as horizontal
// lines, as SVG or PNG ([MemoryVsSeqLen], [MemoryVsBatch]), and a stacked
// bar of a result's components for the terminal ([Breakdown]) in Unicode
// blocks or plain ASCII.
//
// Charts are drawn by the package itself: SVG as plain elements, PNG with
// golang.org/x/image's anti-aliasing rasteriser and the Go Regular font
// embedded in the binary. Nothing is set up when the program starts; the
// font is parsed when the first chart is drawn. Charts have a fixed size
// and the same input gives the same bytes; the golden tests rely on it.
package plot
