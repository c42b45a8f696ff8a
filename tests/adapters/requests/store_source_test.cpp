// The store as the server's model source: a stored model's blobs may come from a registry, so
// their shape is checked where they are read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "hostlm/error.h"
#include "hostlm/ollama/api.h"
#include "hostlm/ollama/modelfile.h"
#include "hostlm/ollama/store.h"
#include "hostlm/serving.h"

namespace hostlm::ollama {
namespace {

namespace fs = std::filesystem;

TEST(StoreModelSource, MessagesOfTheWrongShapeAreAnErrorNamingTheModel) {
  const fs::path root =
      fs::temp_directory_path() / ("hostlm-store-source-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path model = fs::path(HOSTLM_TEST_SOURCE_DIR) / "tests/data/models/tiny-tied-f32";
  auto store = std::make_shared<ModelStore>(root / "store");
  const CreateRequest req = to_create_request(
      parse_modelfile("FROM " + model.string() + "\nMESSAGE user hi\nMESSAGE assistant yo\n"),
      root);
  const StoredModel created = store->create("chatty", req);
  const auto source = store_model_source(store);
  const std::optional<ModelSpec> good = source->find("chatty");
  ASSERT_TRUE(good);
  ASSERT_EQ(good->messages.size(), 2u);
  EXPECT_EQ(good->messages[1].content, "yo");

  // Rewrite the messages blob in place, as a registry could have sent it.
  for (const Layer& layer : created.layers)
    if (layer.media_type == media::kMessages) {
      const fs::path blob = root / "store/blobs" / ("sha256-" + layer.digest.substr(7));
      ASSERT_TRUE(fs::exists(blob)) << blob;
      for (const char* bad : {R"([5])", R"([{"role": 1, "content": "x"}])",
                              R"([{"role": "user", "content": {"text": "x"}}])"}) {
        std::ofstream(blob, std::ios::trunc) << bad;
        try {
          source->find("chatty");
          ADD_FAILURE() << bad << " was taken";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("its messages must each have a string role"),
                    std::string::npos)
              << e.what();
        }
      }
    }
  fs::remove_all(root);
}

}  // namespace
}  // namespace hostlm::ollama
