package model

import "testing"

// TestImageShape checks what one square image becomes for each way a
// processor prepares it, against counts worked out from the processors'
// sources.
func TestImageShape(t *testing.T) {
	clip := &Vision{ImageSize: 336, PatchSize: 14, SpatialMerge: 1, TokensPerImage: 576}
	qwen := &Vision{ImageSize: 448, PatchSize: 14, SpatialMerge: 2, Resize: ResizeNative}
	// Mistral Small 3.1: 1540 px at most, 14 px patches merged 2×2, one
	// [IMG_BREAK]/[IMG_END] per row.
	pixtral := &Vision{ImageSize: 1540, PatchSize: 14, SpatialMerge: 2, Resize: ResizeNative, MaxImageSize: 1540, RowTokens: 1}
	mllama := &Vision{ImageSize: 448, PatchSize: 14, SpatialMerge: 1, TileTokens: 1, Tiling: &Tiling{Kind: TilesFixed, MaxTiles: 4}}
	// InternVL: 448 px tiles of 14 px patches, pixel shuffle 0.5 (merge
	// 2), 1 to 12 tiles plus a thumbnail, <img> and </img> around them.
	internvl := &Vision{ImageSize: 448, PatchSize: 14, SpatialMerge: 2, ImageTokens: 2,
		Tiling: &Tiling{Kind: TilesGrid, MinTiles: 1, MaxTiles: 12, Thumbnail: true}}
	tests := []struct {
		name string
		v    *Vision
		side int
		want ImageShape
	}{
		{"clip default", clip, 0, ImageShape{1, 576, 576}},
		{"clip ignores the input size", clip, 1024, ImageShape{1, 576, 576}},
		{"qwen default", qwen, 0, ImageShape{1, 1024, 256}},
		{"qwen 896", qwen, 896, ImageShape{1, 4096, 1024}},
		{"pixtral default", pixtral, 0, ImageShape{1, 110 * 110, 55*55 + 55}},
		{"pixtral capped", pixtral, 4000, ImageShape{1, 110 * 110, 55*55 + 55}},
		{"pixtral small", pixtral, 280, ImageShape{1, 20 * 20, 10*10 + 10}},
		{"mllama pads to 4 tiles", mllama, 100, ImageShape{4, 1024, 4 * 1025}},
		{"internvl one tile", internvl, 448, ImageShape{1, 1024, 256 + 2}},
		// 896²: the 2×2 grid beats 1×1 (area 802,816 > 0.5·448²·4) and
		// 3×3 does not (< 0.5·448²·9): 4 tiles + thumbnail.
		{"internvl 896", internvl, 896, ImageShape{5, 1024, 5*256 + 2}},
		{"internvl 2000", internvl, 2000, ImageShape{10, 1024, 10*256 + 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Image(tt.side); got != tt.want {
				t.Errorf("Image(%d) = %+v, want %+v", tt.side, got, tt.want)
			}
		})
	}
}

// TestImageTokensGrow checks that a larger image never becomes fewer
// tokens or tower patches, for every tiling kind.
func TestImageTokensGrow(t *testing.T) {
	towers := map[string]*Vision{
		"grid":   {ImageSize: 448, PatchSize: 14, SpatialMerge: 2, Tiling: &Tiling{Kind: TilesGrid, MinTiles: 1, MaxTiles: 12, Thumbnail: true}},
		"split":  {ImageSize: 512, PatchSize: 16, SpatialMerge: 4, Tiling: &Tiling{Kind: TilesSplit, MaxTiles: 16, Thumbnail: true, LongestEdge: 2048}},
		"native": {ImageSize: 448, PatchSize: 14, SpatialMerge: 2, Resize: ResizeNative},
	}
	for name, v := range towers {
		prev := v.Image(1)
		for side := 2; side <= 5000; side += 7 {
			got := v.Image(side)
			if got.Tokens < prev.Tokens || got.Tiles*got.Patches < prev.Tiles*prev.Patches {
				t.Fatalf("%s: side %d gives %+v, fewer than %+v at side %d", name, side, got, prev, side-7)
			}
			prev = got
		}
	}
}
