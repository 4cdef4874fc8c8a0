package dashboardview

import (
	"fmt"
	"slices"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// GraphInput is what the reader may see of one Workload. A nil Claims, Plan or Exposure with
// its Hidden flag set is one the reader's rights do not show; without the flag, one that does
// not exist (yet).
type GraphInput struct {
	Workload       *scorev1b1.Workload
	Claims         []scorev1b1.ResourceClaim
	ClaimsHidden   bool
	Plan           *scorev1b1.WorkloadPlan
	PlanHidden     bool
	Exposure       *scorev1b1.WorkloadExposure
	ExposureHidden bool
	// Copies are the Workload's other copies on several clusters (copies.go), by slot.
	Copies []Copy
}

// Node is one box of the graph.
type Node struct {
	// ID is unique in the graph and stable across updates.
	ID         string
	Kind, Name string
	Health     Health
	// Detail is one line under the name: a phase, a message, what the reader cannot see.
	Detail string
	// X and Y are the box's top-left corner.
	X, Y int
}

// Edge joins a parent to a child: Path is an SVG path from the parent's right side to the
// child's left side.
type Edge struct {
	From, To string
	Path     string
}

// Graph is a Workload's graph, laid out left to right: the Workload; its claims, plan and
// exposure; what each claim provisioned, each object the plan applied, the endpoints.
type Graph struct {
	Nodes         []Node
	Edges         []Edge
	Width, Height int
	// NodeWidth and NodeHeight are every box's size.
	NodeWidth, NodeHeight int
}

// The layout's measures, in SVG units.
const (
	NodeWidth   = 250
	NodeHeight  = 46
	columnPitch = 310
	rowPitch    = 58
	margin      = 8
)

// branch is a node of the middle column with its children.
type branch struct {
	node     Node
	children []Node
}

// BuildGraph lays out the graph of in.Workload.
func BuildGraph(in GraphInput) Graph {
	w := in.Workload
	root := Node{ID: "workload", Kind: "Workload", Name: w.Name, Health: WorkloadHealth(w), Detail: readyDetail(w)}
	var branches []branch
	branches = append(branches, claimBranches(in)...)
	branches = append(branches, planBranch(in))
	branches = append(branches, exposureBranches(in)...)
	branches = append(branches, copyBranches(in)...)
	return layout(root, branches)
}

func readyDetail(w *scorev1b1.Workload) string {
	for _, c := range w.Status.Conditions {
		if c.Type == scorev1b1.ConditionReady {
			if c.Reason == "" {
				return "Ready " + string(c.Status)
			}
			return "Ready " + string(c.Status) + " · " + c.Reason
		}
	}
	return "not reported yet"
}

// claimBranches are the claims with what each provisioned; when the reader may not read claims,
// the claims the Workload's status lists, without children.
func claimBranches(in GraphInput) []branch {
	var out []branch
	if in.ClaimsHidden {
		for _, c := range in.Workload.Status.Claims {
			out = append(out, branch{node: Node{ID: "claim/" + c.Key, Kind: "Dependency", Name: c.Key, Health: ClaimHealth(c.Phase),
				Detail: phaseOr(string(c.Phase), "Pending") + " · details need platform rights"}})
		}
		return out
	}
	claims := slices.Clone(in.Claims)
	slices.SortFunc(claims, func(a, b scorev1b1.ResourceClaim) int { return strings.Compare(a.Spec.Key, b.Spec.Key) })
	for _, c := range claims {
		id := "claim/" + c.Spec.Key + copySuffix(c.Name)
		detail := c.Spec.Key + " (" + c.Spec.Type + ") · " + phaseOr(string(c.Status.Phase), "Pending")
		if c.Status.Phase != scorev1b1.ClaimPhaseBound && c.Status.Message != "" {
			detail += " · " + c.Status.Message // the provisioner's own words on what is wrong
		}
		b := branch{node: Node{ID: id, Kind: "ResourceClaim", Name: c.Name, Health: ClaimHealth(c.Status.Phase), Detail: detail}}
		for _, o := range c.Status.Resources {
			b.children = append(b.children, objectNode(id, o))
		}
		out = append(out, b)
	}
	return out
}

func planBranch(in GraphInput) branch {
	switch {
	case in.PlanHidden:
		return branch{node: Node{ID: "plan", Kind: "WorkloadPlan", Name: in.Workload.Name, Health: Hidden, Detail: "not visible with your rights"}}
	case in.Plan == nil:
		return branch{node: Node{ID: "plan", Kind: "WorkloadPlan", Name: in.Workload.Name, Health: scorev1b1.HealthUnknown, Detail: "not emitted yet"}}
	}
	return planNode("plan", in.Plan)
}

// planNode is a plan with the objects applied for it, under id.
func planNode(id string, p *scorev1b1.WorkloadPlan) branch {
	detail := p.Spec.Profile + " → " + p.Spec.BackendID
	if p.Spec.Cluster != "" {
		detail += " on " + p.Spec.Cluster
	}
	b := branch{node: Node{ID: id, Kind: "WorkloadPlan", Name: p.Name, Health: PlanHealth(p), Detail: detail}}
	for _, o := range p.Status.Objects {
		b.children = append(b.children, objectNode(id, o))
	}
	return b
}

// exposureBranches is the exposure with its endpoints; when the reader may not read exposures,
// the endpoint the Workload's status mirrors, on its own.
func exposureBranches(in GraphInput) []branch {
	if in.ExposureHidden {
		if e := in.Workload.Status.Endpoint; e != nil {
			return []branch{{node: Node{ID: "endpoint", Kind: "Endpoint", Name: *e, Health: scorev1b1.HealthCurrent, Detail: "from the Workload's status"}}}
		}
		return nil
	}
	if in.Exposure == nil {
		return nil
	}
	return []branch{exposureNode("exposure", in.Exposure)}
}

// exposureNode is an exposure with its endpoints, under id.
func exposureNode(id string, x *scorev1b1.WorkloadExposure) branch {
	b := branch{node: Node{ID: id, Kind: "WorkloadExposure", Name: x.Name, Health: exposureHealth(x), Detail: fmt.Sprintf("%d endpoint(s)", len(x.Status.Exposures))}}
	for i, e := range x.Status.Exposures {
		h, detail := scorev1b1.HealthCurrent, string(e.Scope)
		if e.Reachable != nil && !*e.Reachable {
			h, detail = scorev1b1.HealthFailed, strings.TrimSpace(detail+" · not reachable")
		}
		b.children = append(b.children, Node{ID: fmt.Sprintf("%s/%d", id, i), Kind: "Endpoint", Name: e.URL, Health: h, Detail: detail})
	}
	return b
}

func exposureHealth(x *scorev1b1.WorkloadExposure) Health {
	for _, c := range x.Status.Conditions {
		if c.Type == scorev1b1.ExposureConditionHealthy {
			if c.Status == "True" {
				return scorev1b1.HealthCurrent
			}
			return scorev1b1.HealthInProgress
		}
	}
	if len(x.Status.Exposures) > 0 {
		return scorev1b1.HealthCurrent
	}
	return scorev1b1.HealthInProgress
}

func objectNode(parent string, o scorev1b1.AppliedObject) Node {
	ref := o.Kind + "/" + o.Name
	if o.Namespace != "" {
		ref = o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	detail := objectHealth(o)
	if o.Cluster != "" {
		// On a member cluster; during a move the same object is listed on two.
		ref = o.Cluster + ":" + ref
		detail = "on " + o.Cluster + " · " + detail
	}
	if o.Message != "" {
		detail += " · " + o.Message
	}
	return Node{ID: parent + "/" + ref, Kind: o.Kind, Name: o.Name, Health: objectHealth(o), Detail: detail}
}

func phaseOr(phase, fallback string) string {
	if phase == "" {
		return fallback
	}
	return phase
}

// layout places the root in the first column, the branches in the second and their children in
// the third; each branch is as tall as its children and centred on them, the root on all.
func layout(root Node, branches []branch) Graph {
	g := Graph{NodeWidth: NodeWidth, NodeHeight: NodeHeight}
	row := 0
	for i := range branches {
		b := &branches[i]
		span := max(1, len(b.children))
		b.node.X, b.node.Y = margin+columnPitch, rowY(float64(row)+float64(span-1)/2)
		for j := range b.children {
			b.children[j].X, b.children[j].Y = margin+2*columnPitch, rowY(float64(row+j))
		}
		row += span
	}
	root.X, root.Y = margin, rowY(float64(max(row, 1)-1)/2)
	g.Nodes = append(g.Nodes, root)
	for _, b := range branches {
		g.Nodes = append(g.Nodes, b.node)
		g.Edges = append(g.Edges, edge(root, b.node))
		for _, c := range b.children {
			g.Nodes = append(g.Nodes, c)
			g.Edges = append(g.Edges, edge(b.node, c))
		}
	}
	// What a node shows is the cluster's text (a provisioner's message, an object's own
	// words, an endpoint): a bidi override in it would reorder the page.
	for i := range g.Nodes {
		g.Nodes[i].Name, g.Nodes[i].Detail = termtext.Escape(g.Nodes[i].Name), termtext.Escape(g.Nodes[i].Detail)
	}
	columns := 1
	for _, n := range g.Nodes {
		columns = max(columns, (n.X-margin)/columnPitch+1)
	}
	g.Width = 2*margin + (columns-1)*columnPitch + NodeWidth
	g.Height = 2*margin + (max(row, 1)-1)*rowPitch + NodeHeight
	return g
}

func rowY(row float64) int { return margin + int(row*rowPitch) }

func edge(from, to Node) Edge {
	x1, y1 := from.X+NodeWidth, from.Y+NodeHeight/2
	x2, y2 := to.X, to.Y+NodeHeight/2
	mid := (x1 + x2) / 2
	return Edge{From: from.ID, To: to.ID, Path: fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, mid, y1, mid, y2, x2, y2)}
}
