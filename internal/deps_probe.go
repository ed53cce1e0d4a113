package internal

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/lmittmann/tint"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "k8s.io/client-go/tools/leaderelection"
)
