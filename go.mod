module github.com/gpumem/gpumem

go 1.26.8

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/go-analyze/charts v0.6.4
	github.com/google/go-cmp v0.7.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/term v0.47.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	golang.org/x/image v0.45.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
