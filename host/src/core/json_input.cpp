#include "hostlm/json_input.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;

// Builds the value as nlohmann's own parser does (a repeated key keeps its first place and
// takes its last value), with two differences: nesting is bounded, and keys are found through
// a hash table once an object grows. ordered_json's own insert searches its object linearly,
// so parsing an object of n keys took O(n^2): 256K keys (3 MB) took 78 s.
class BoundedBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit BoundedBuilder(int max_depth) : max_depth_(max_depth) {}
  Json take() { return std::move(root_); }

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(number_integer_t v) { return put(v); }
  bool number_unsigned(number_unsigned_t v) { return put(v); }
  bool number_float(number_float_t v, const string_t&) { return put(v); }
  bool string(string_t& v) { return put(std::move(v)); }
  bool binary(binary_t& v) { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& name) {
    Open& o = open_.back();
    Members& members = o.value->get_ref<Json::object_t&>();
    size_t at = members.size();
    if (o.index.empty()) {
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i].first == name) at = i;
      if (members.size() + 1 >= kIndexFrom)
        for (size_t i = 0; i < members.size(); ++i) o.index.emplace(members[i].first, i);
    } else if (const auto it = o.index.find(name); it != o.index.end()) {
      at = it->second;
    }
    if (at == members.size()) {
      if (!o.index.empty()) o.index.emplace(name, at);
      members.emplace_back(std::move(name), nullptr);
    }
    o.slot = &members[at].second;
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    throw error;
  }

 private:
  // ordered_map is a vector of pairs underneath; appending to it directly skips its search.
  using Members = std::vector<std::pair<const std::string, Json>>;
  static constexpr size_t kIndexFrom = 16;  // smaller objects are searched in place

  struct Open {
    Json* value;
    Json* slot = nullptr;  // objects: where the value of the last key goes
    std::unordered_map<std::string, size_t> index;
  };

  // Where the next value goes: the root, the end of the open array, or the last key's slot.
  Json* place(Json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Open& o = open_.back();
    if (o.value->is_array()) {
      o.value->push_back(std::move(value));
      return &o.value->back();
    }
    *o.slot = std::move(value);
    return o.slot;
  }
  bool put(Json&& value) {
    place(std::move(value));
    return true;
  }
  bool open(Json&& container) {
    if (open_.size() >= static_cast<size_t>(max_depth_))
      throw JsonTooDeep("nested deeper than " + std::to_string(max_depth_) + " levels");
    Json* where = place(std::move(container));
    open_.push_back(Open{where, nullptr, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  int max_depth_;
  Json root_;
  std::vector<Open> open_;
};

}  // namespace

JsonTooDeep::~JsonTooDeep() = default;

nlohmann::ordered_json parse_input_json(std::string_view text, int max_depth) {
  BoundedBuilder builder(max_depth);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return builder.take();
}

nlohmann::ordered_json parse_input_json_or_discarded(std::string_view text, int max_depth) {
  try {
    return parse_input_json(text, max_depth);
  } catch (const nlohmann::json::exception&) {
  } catch (const JsonTooDeep&) {
  }
  return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
}

}  // namespace hostlm
