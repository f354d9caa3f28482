package handler

import (
	"bytes"
	"embed"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"

	"github.com/gin-gonic/gin"

	"seckill/internal/benchreport"
	"seckill/internal/httpkit"
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
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{Error: "no such dashboard file: " + name, Status: http.StatusNotFound})
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

// lastBench godoc
//
//	@Summary		The last bench run on this machine, drawn
//	@Description	Draws the report the last `seckill bench` on this machine kept (in
//	@Description	$XDG_CACHE_HOME/seckill/bench-last.json, else ~/.cache/seckill/bench-last.json, read as
//	@Description	the service's own environment sees them) as `seckill bench --html` does: sales/s against
//	@Description	the peers, each mode's waits as a CDF on a log axis and the sales per buyer, for each
//	@Description	instance count the run had. A self-contained page; 404 until a bench has run here.
//	@Tags			dashboard
//	@Produce		html
//	@Success		200	{string}	string		"the page"
//	@Failure		404	{object}	httpkit.ErrorBody	"no bench run kept on this machine"
//	@Failure		500	{object}	httpkit.ErrorBody	"the kept file is not a bench report"
//	@Router			/bench [get]
func (a *API) lastBench(c *gin.Context) {
	p := a.opt.BenchReport
	if p == "" {
		p = benchreport.LastRunPath(os.Getenv)
	}
	rep, err := benchreport.LoadRun(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || p == "":
		c.JSON(http.StatusNotFound, httpkit.ErrorBody{Error: "no bench run kept on this machine yet: `go run . bench` keeps its last run for this page", Status: http.StatusNotFound})
		return
	case err != nil:
		a.log.Error("bench page", "file", p, "err", err)
		c.JSON(http.StatusInternalServerError, httpkit.ErrorBody{Error: "the last bench run's file is not a bench report; run `go run . bench` again", Status: http.StatusInternalServerError})
		return
	}
	var buf bytes.Buffer
	if err := benchreport.WriteHTML(&buf, rep); err != nil {
		c.JSON(http.StatusInternalServerError, httpkit.ErrorBody{Error: "drawing the bench: " + err.Error(), Status: http.StatusInternalServerError})
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}
