// Subgraphs of control-flow nodes (If's then_branch/else_branch, Loop's and Scan's body): the
// values they read from the enclosing scope, and the "implicit inputs" the Executor gives such a
// node so that those reads are ordinary inputs (ONNX Runtime's Node::ImplicitInputDefs).
//
// ONNX lets a subgraph read any value of an enclosing graph by name without declaring it. The
// Executor resolves a node's inputs to slots and frees each value after its last reader, so a
// read it cannot see would find the value missing or already freed. Before it builds its steps,
// the Executor therefore appends to every control-flow node of ITS OWN COPY of the graph the
// node's free names (below) as extra inputs, records how many it appended in the internal
// attribute kImplicitInputsAttr, and re-sorts the nodes (a value read only inside a subgraph may
// be produced after the control-flow node in the model's order). The kernel then receives the
// outer values as its last inputs and feeds them to the subgraph's own Executor, whose graph
// declares them as extra inputs (subgraph_for_executor).
//
// The caller's Graph is never changed: the loader, convert, shape folding, autodiff and the
// model export keep seeing the node as the model wrote it.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat {

// Int attribute set on a node of the Executor's copy: how many inputs at the end of the node's
// input list are implicit (outer-scope values its subgraphs read). Absent on every model node.
constexpr const char* kImplicitInputsAttr = "oat.implicit_inputs";

// Whether the node has a subgraph attribute (kind Graph or Graphs).
bool node_has_subgraph(const Node& n);
// Whether any node of g has one.
bool graph_has_subgraphs(const Graph& g);

// The names a subgraph reads without defining them: inputs of its nodes and its own outputs that
// are none of its inputs, initializers or node outputs, and, recursively, the free names of the
// subgraphs of its nodes that it does not define. In order of first use; "" is never one.
std::vector<std::string> subgraph_free_names(const Graph& g);

// The implicit inputs of a node: the union of the free names of its subgraphs (attributes in name
// order), in order of first appearance. Empty for a node without subgraphs.
std::vector<std::string> implicit_inputs(const Node& n);

// The number of implicit inputs appended to n by add_implicit_inputs (0 when none or not done).
size_t num_implicit_inputs(const Node& n);

// Appends every node's implicit inputs (see above) and re-sorts g.nodes topologically. Values
// known before any node runs are g's inputs and initializers. Returns whether g changed.
// Idempotent: a node that already carries kImplicitInputsAttr is left alone.
bool add_implicit_inputs(Graph& g);

// The graph a control-flow kernel runs for one subgraph: a copy of `body` whose inputs are its
// declared inputs (shapes dropped: loop-carried values may change shape between iterations, and
// exporters write the iteration counter as [] or [1]; the dtype is kept and checked) followed by
// `outer` (the body's free names, dtype undefined: they arrive with the enclosing graph's types).
Graph subgraph_for_executor(const Graph& body, const std::vector<std::string>& outer);

}  // namespace oat
