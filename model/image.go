package model

// How a processor sizes an image before the vision tower (Vision.Resize).
const (
	// ResizeFixed resizes every image to ImageSize (CLIP, SigLIP,
	// Gemma 3): the input size does not change the token count.
	ResizeFixed = "fixed"
	// ResizeNative keeps the image's own size, in whole patches, up to
	// MaxImageSize when set (Qwen-VL, Pixtral).
	ResizeNative = "native"
)

// Tiling kinds (Tiling.Kind).
const (
	// TilesFixed always runs MaxTiles tiles (Mllama pads an image to
	// max_image_tiles tiles).
	TilesFixed = "fixed"
	// TilesGrid picks the grid of ImageSize tiles closest to the image's
	// aspect ratio with between MinTiles and MaxTiles tiles, plus a
	// thumbnail when there is more than one (InternVL's
	// dynamic_preprocess).
	TilesGrid = "grid"
	// TilesSplit resizes the longest edge to LongestEdge (at most), rounds
	// it up to whole tiles and adds one global tile when there is more than
	// one (Idefics3 and SmolVLM image processors).
	TilesSplit = "split"
)

// Tiling says how an image is cut into ImageSize tiles, each encoded by
// the tower as its own sequence.
type Tiling struct {
	// Kind is TilesFixed, TilesGrid or TilesSplit.
	Kind string `json:"kind"`
	// MinTiles and MaxTiles bound the number of tiles of the grid
	// (without the thumbnail); MaxTiles is the count for TilesFixed.
	MinTiles int `json:"min_tiles,omitempty"`
	MaxTiles int `json:"max_tiles"`
	// Thumbnail adds one tile of the whole image when there is more than
	// one tile.
	Thumbnail bool `json:"thumbnail,omitempty"`
	// LongestEdge is the side an image is resized to before a TilesSplit
	// split (its longest edge, only ever scaled down to it).
	LongestEdge int `json:"longest_edge,omitempty"`
}

// ImageShape is what one image becomes.
type ImageShape struct {
	// Tiles is the number of sequences the vision tower encodes (tiles or
	// crops, thumbnail included); 1 for an untiled image.
	Tiles int `json:"tiles"`
	// Patches is the length of each tower sequence, in patches.
	Patches int `json:"patches"`
	// Tokens is the number of LLM tokens (or cross-attention states) the
	// image becomes, the processor's special tokens included.
	Tokens int `json:"tokens"`
}

// Image returns the shape of one square image of side px as the
// model's processor prepares it; side 0 is the processor's default size
// (ImageSize), which is what TokensPerImage counts.
func (v *Vision) Image(side int) ImageShape {
	if side <= 0 {
		side = v.ImageSize
	}
	p, m := max(v.PatchSize, 1), max(v.SpatialMerge, 1)
	n := v.ImageSize / p // patches per side of one tile or fixed image
	switch {
	case v.Tiling != nil:
		tiles := v.Tiling.count(side, v.ImageSize)
		per := (n / m) * (n / m)
		return ImageShape{Tiles: tiles, Patches: n * n,
			Tokens: tiles*(per+v.TileTokens) + v.ImageTokens}
	case v.Resize == ResizeNative:
		if v.MaxImageSize > 0 {
			side = min(side, v.MaxImageSize)
		}
		// Whole merged patches (Qwen2-VL's smart_resize rounds the side
		// to a multiple of patch·merge; Pixtral's resize to whole patches).
		rows := max(side/(p*m), 1)
		return ImageShape{Tiles: 1, Patches: rows * m * rows * m,
			Tokens: rows*rows + rows*v.RowTokens + v.ImageTokens}
	}
	return ImageShape{Tiles: 1, Patches: n * n, Tokens: v.TokensPerImage}
}

// count is the number of tiles (thumbnail included) a square image of
// side px becomes.
func (t *Tiling) count(side, tile int) int {
	tile = max(tile, 1)
	var n int
	switch t.Kind {
	case TilesFixed:
		return max(t.MaxTiles, 1)
	case TilesSplit:
		if t.LongestEdge > 0 {
			side = min(side, t.LongestEdge)
		}
		per := (side + tile - 1) / tile // ceil: the processor pads to whole tiles
		n = per * per
	default: // TilesGrid
		n = gridTiles(side, tile, max(t.MinTiles, 1), max(t.MaxTiles, 1))
	}
	if n > 1 && t.Thumbnail {
		n++
	}
	return max(n, 1)
}

// gridTiles is the tile count InternVL's dynamic_preprocess gives a
// square image (find_closest_aspect_ratio: among the square grids i×i
// with lo ≤ i² ≤ hi, all equally close to the aspect ratio 1, the larger
// one wins while the image's area exceeds half of the grid's pixel area).
func gridTiles(side, tile, lo, hi int) int {
	best := 0
	area := float64(side) * float64(side)
	for i := 1; i*i <= hi; i++ {
		if i*i < lo {
			continue
		}
		if best == 0 || area > 0.5*float64(tile*tile)*float64(i*i) {
			best = i * i
		}
	}
	return max(best, 1)
}
