// The containment forest of a thread's CPU events (see roofline/trace_tree.hpp): the same
// stack pass as python/roofline/trace/_parse.py's _Thread did, and the chain's choices read
// off it in the same forward pass.
#include "roofline/trace_tree.hpp"

#include <vector>

namespace roofline::trace {

bool containment_tree(const ThreadEvents& ev, const ChainFlags& flags, const ThreadTree& out) {
  const std::size_t n = ev.n;
  for (std::size_t i = 0; i < n; ++i) {
    if (ev.shape[i] < 0 || static_cast<std::size_t>(ev.shape[i]) >= flags.n_shapes ||
        ev.name[i] < 0 || static_cast<std::size_t>(ev.name[i]) >= flags.n_names ||
        ev.args[i] < 0 || static_cast<std::size_t>(ev.args[i]) >= flags.n_args)
      return false;
  }
  std::vector<std::int64_t> stack;  // the open events
  std::vector<double> ends;         // and their ends
  std::vector<std::int64_t> first_op(n);
  std::vector<std::uint8_t> has_region(n);  // a region event on the chain
  std::int64_t top = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = ev.ts[i];
    if (!ends.empty() && ends.back() <= t) {
      while (!ends.empty() && ends.back() <= t) {
        ends.pop_back();
        stack.pop_back();
      }
      top = stack.empty() ? -1 : stack.back();
    }
    out.parent[i] = top;
    const auto self = static_cast<std::int64_t>(i);
    stack.push_back(self);
    ends.push_back(ev.end[i]);
    top = self;
    const std::int64_t p = out.parent[i];  // < i: its choices are known
    const auto pu = static_cast<std::size_t>(p);
    const bool is_op = ev.cat[i] == flags.op_code;
    const bool shaped = is_op && flags.shaped[ev.shape[i]] != 0;
    // chosen[p] is p's innermost shaped op if there is one, else its innermost op
    const std::int64_t up = p >= 0 ? out.chosen[p] : -1;
    const bool up_shaped = up >= 0 && ev.cat[up] == flags.op_code &&
                           flags.shaped[ev.shape[up]] != 0;
    first_op[i] = is_op ? self : (p >= 0 ? first_op[pu] : -1);
    out.chosen[i] = shaped ? self : (up_shaped ? up : first_op[i]);
    out.root[i] = p >= 0 ? out.root[p] : self;
    const bool region = ev.cat[i] <= flags.region_code;
    const bool region_above = p >= 0 && has_region[pu] != 0;
    has_region[i] = region || region_above;
    const bool adds = flags.module[ev.name[i]] != 0 || flags.collective[ev.args[i]] != 0 ||
                      (region && !region_above);
    out.context[i] = adds ? self : (p >= 0 ? out.context[p] : -1);
  }
  return true;
}

}  // namespace roofline::trace
