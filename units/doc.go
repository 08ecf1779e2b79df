// Package units holds the typed quantities gpumem computes with: [Bytes]
// (memory sizes, with IEC and SI formatting and parsing) and [Params]
// (parameter counts). It is a leaf package with no dependencies.
//
// Sizes are integers of bytes; floating point is used only to format them.
// Helpers such as [Add], [MulInt] and [FromFloat] saturate instead of
// overflowing, so no estimate can wrap around to a negative number.
package units
