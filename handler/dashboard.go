package handler

import (
	"embed"
	"mime"
	"net/http"
	"path"

	"github.com/gin-gonic/gin"
)

// The dashboard's files are compiled in, so the page works offline and needs no file layout
// next to the binary.
//
//go:embed static
var staticFiles embed.FS

// dashboard serves the single page at /.
func dashboard(c *gin.Context) { serveStatic(c, "index.html") }

// dashboardAsset serves the page's scripts and styles under /dashboard/.
func dashboardAsset(c *gin.Context) { serveStatic(c, c.Param("file")) }

func serveStatic(c *gin.Context, name string) {
	name = path.Clean("/" + name)[1:]
	body, err := staticFiles.ReadFile("static/" + name)
	if err != nil || name == "" {
		c.AbortWithStatusJSON(http.StatusNotFound, ErrorBody{Error: "no such dashboard file: " + name, Status: http.StatusNotFound})
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	// The page is small and changes with the binary: always revalidate.
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, ctype, body)
}
