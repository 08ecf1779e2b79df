// Package calibrate fits corrections of the memory model to measured runs
// and stores them as calibration profiles.
//
// The memory model keeps every number it cannot derive from code or papers
// in a table of named constants ([memory.Constants]): the activation
// scale, the caching allocator's fragmentation, the CUDA context, library
// workspaces and other non-PyTorch memory. A [Profile] is a set of
// overrides of those constants for one GPU kind and software stack;
// [Profile.Apply] puts them into a [memory.Job] (explicit --set values
// win).
//
// # Runs
//
// A runs file has one [Run] per line (JSON Lines): the job, the estimate
// gpumem made for it (the per-GPU result with its components) and the
// peaks a probe measured. `gpumem probe --record runs.jsonl` appends such
// lines; [ReadRuns] reads them.
//
// # Fitting
//
// [Fit] fits three terms by weighted least squares, each on the level of
// memory it governs, never a factor on the total:
//
//   - activation_scale from training runs' allocated peaks,
//   - fragmentation (training, inference or torch-1 variant) from
//     reserved versus allocated,
//   - the device constant (context + workspace + misc) from nvidia-smi
//     versus reserved.
//
// When an [Estimator] is given (the CLI passes gpumem's own, on the
// model each run names), every run is estimated anew so the profile
// corrects today's model, the response of the allocated peak to
// activation_scale is measured by a finite difference rather than assumed
// from the activation rows, and the error after the fit comes from real
// estimates with the fitted constants.
//
// The solver is a small Householder QR ([Solve]); it reports standard
// errors so a profile shows how well each term is determined. The fit
// statistics give the error at each level before and after, and a
// leave-one-out figure that predicts each run from the others.
//
// # The default profile
//
// [Default] is built into the binary and overrides nothing. No run on real
// GPU hardware was made while gpumem was written, so there was nothing to
// fit: the model's documented defaults stand until a user calibrates for
// their own GPU and stack.
package calibrate
