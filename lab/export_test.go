package lab

import "time"

// InjectStall makes every row r runs see a stall of at least d, as if the machine had stalled
// (the starvation meter's test hook).
func InjectStall(r *Runner, d time.Duration) { r.injectStall = d }
