// Package labapp wires the scenario lab into an app.App: the fault hook on its Redis clients and
// the broken modes' knobs before its locks are built, the service's fault injector, and the lab's
// routes. The command line and the tests hand it to app.New and app.Serve; app imports none of
// the lab.
package labapp

import (
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/internal/httpkit"
	"seckill/internal/modes"
	"seckill/lab"
	"seckill/lab/fault"
	"seckill/lab/labhttp"
)

// Lab is the lab as app.New wires it (an app.Lab). With lab.enabled off it installs no fault,
// and its routes answer 403 naming the switch rather than 404.
type Lab struct{}

var _ app.Lab = Lab{}

// Clients installs the fault hook on the App's clients and returns the broken modes' knobs: the
// faults a sale may ask for act through them; without the lab, the service refuses them.
func (Lab) Clients(a *app.App) modes.StepHooks {
	if !a.Config.Lab.Enabled {
		return modes.StepHooks{}
	}
	fault.Install(append([]redis.UniversalClient{a.Data}, a.Masters...)...)
	return fault.Steps()
}

// Routes gives the service the lab's sale hook (its faults) and builds the lab's routes on it.
func (Lab) Routes(a *app.App) (func(gin.IRouter, httpkit.Kit), func()) {
	var routes *labhttp.Lab
	if a.Config.Lab.Enabled {
		a.Service.SetHook(lab.FaultsFor(a.Service.Settings()))
		routes = labhttp.New(a.Service, &lab.Runner{Data: a.Data, Masters: a.Masters, Log: a.Log.With("component", "lab")},
			a.Metrics, a.Log)
	} else {
		routes = labhttp.New(a.Service, nil, a.Metrics, a.Log)
	}
	return routes.Mount, routes.Close
}
