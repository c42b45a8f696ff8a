// Store models as serving specs: weights plus what the Modelfile set.
#include "hostlm/ollama/api.h"
#include "hostlm/ollama/api_requests.h"
#include "hostlm/ollama/go_template.h"
#include "template_format.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;

class StoreModelSource final : public ModelSource {
 public:
  explicit StoreModelSource(std::shared_ptr<const ModelStore> store) : store_(std::move(store)) {}

  std::optional<ModelSpec> find(std::string_view name) const override {
    if (!ModelName::try_parse(name)) return std::nullopt;  // a path, or not a name at all
    std::optional<StoredModel> m;
    try {
      m = store_->find(name);
    } catch (const RequestError&) {
      return std::nullopt;
    }
    if (!m) return std::nullopt;
    return spec_of(*m);
  }

  std::vector<ModelSpec> list() const override {
    std::vector<ModelSpec> out;
    for (const StoredModel& m : store_->list()) {
      try {
        out.push_back(spec_of(m));
      } catch (const std::exception&) {
        // Listed models that cannot be served still must not hide the others.
      }
    }
    return out;
  }

 private:
  static ModelSpec spec_of(const StoredModel& m) {
    if (m.model_path.empty())
      throw InvalidRequest("model '" + m.name.display() + "' has no weights layer");
    if (!m.adapter_paths.empty())
      throw InvalidRequest("model '" + m.name.display() +
                           "' uses a LoRA adapter (ADAPTER), which hostlm cannot apply yet");
    ModelSpec spec;
    spec.name = m.name.display();
    spec.path = m.model_path;
    spec.digest = m.digest;
    spec.size = m.size;
    spec.modified_at = m.modified_at;
    spec.owned_by = m.name.ns;
    spec.details = m.details();
    spec.defaults = options_from_json(m.params);
    if (const auto think = m.params.find("think"); think != m.params.end())
      spec.think = think->is_boolean() ? think->get<bool>() : true;  // a level means on
    spec.system = m.system;
    for (const Json& message : m.messages) {
      // The messages blob may come from a registry: check its shape rather than let a
      // library type error stand for it.
      const auto role = message.is_object() ? message.find("role") : message.end();
      const auto content = message.is_object() ? message.find("content") : message.end();
      if (role == message.end() || !role->is_string() ||
          (content != message.end() && !content->is_string() && !content->is_null()))
        throw Error("model " + m.name.display() +
                    ": its messages must each have a string role and content");
      ChatMessage cm;
      cm.role = role->get<std::string>();
      if (content != message.end() && content->is_string())
        cm.content = content->get<std::string>();
      spec.messages.push_back(std::move(cm));
    }
    // A RENDERER (qwen3.5) means the plugin's native format, as Ollama does; otherwise a
    // TEMPLATE renders the prompt.
    if (m.template_text && m.renderer().empty()) {
      auto tmpl = std::make_shared<GoTemplate>(GoTemplate::parse(*m.template_text));
      const bool native_parser = !m.parser().empty();
      spec.wrap_format = [tmpl, native_parser](std::unique_ptr<ChatFormat> native) {
        return template_chat_format(*tmpl, std::move(native), native_parser);
      };
    }
    return spec;
  }

  std::shared_ptr<const ModelStore> store_;
};

}  // namespace

std::shared_ptr<const ModelSource> store_model_source(std::shared_ptr<const ModelStore> store) {
  return std::make_shared<StoreModelSource>(std::move(store));
}

}  // namespace hostlm::ollama
