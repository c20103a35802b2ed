// The Vulkan Executable: one device-local arena laid out from the checked memory plan (constants
// uploaded once at compile), the parameter words of every dispatch in one buffer, and one command
// buffer recorded at compile and replayed by every run (inputs staged in, every dispatch with a
// barrier after it, outputs staged out), then a fence wait: no staging byte is written again
// before the copies reading it completed. Taps and test faults run the same dispatches node by
// node (same order, same arena), waiting after each node.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/device.h"
#include "backends/vulkan/program.h"
#include "lockstep/lockstep.h"

namespace lockstep::vulkan {

// A buffer and its memory; `mapped` for host-visible ones.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
  void* mapped = nullptr;
};

class VulkanExecutable final : public Executable {
 public:
  VulkanExecutable(const ir::Graph& graph, const Options& options);
  ~VulkanExecutable() override;
  VulkanExecutable(const VulkanExecutable&) = delete;
  VulkanExecutable& operator=(const VulkanExecutable&) = delete;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) override;
  const ir::Graph& graph() const override { return graph_; }
  std::string backend_name() const override { return "vulkan"; }
  std::vector<std::string> kernel_implementations() const override;

  size_t arena_bytes() const { return static_cast<size_t>(arena_.bytes); }
  size_t dispatch_count() const;
  // Test-only (testing.h): after `node_name`'s dispatches, one writes a word past its output.
  void plant_out_of_bounds_write(const std::string& node_name);

 private:
  void lay_out();
  void record_programs();
  void load_params();
  void upload(const std::vector<std::pair<const void*, size_t>>& pieces, const std::vector<size_t>& arena_offsets,
              const Buffer& target);
  void record_run();
  void record_dispatch(VkCommandBuffer cb, const Dispatch& d) const;
  void record_dispatches(VkCommandBuffer cb, const NodeProgram& program) const;
  void run_checked(const Dispatch& d, const ir::Node& node);
  void stage_inputs(const std::vector<Tensor>& inputs);
  void stage_keys(uint64_t run_seed);
  void check_errors() const;
  std::vector<Tensor> read_outputs() const;
  void submit_and_wait(VkCommandBuffer cb);
  void run_eager(const RunOptions& options);
  Buffer make_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, bool host);
  void free_buffer(Buffer& b) noexcept;
  void free_all() noexcept;

  ir::Graph graph_;
  Options options_;
  Device* dev_ = nullptr;
  std::mutex run_mutex_;  // runs share the arena, staging and command buffers

  std::vector<int64_t> value_offset_;  // bytes from the arena base; -1 without a slot
  std::vector<size_t> value_bytes_;
  std::vector<NodeProgram> programs_;
  std::vector<uint32_t> params_;

  Buffer arena_, params_buffer_, staging_;
  // Staging layout: inputs, outputs, the canary check's word, then one node's outputs (taps, faults).
  std::vector<size_t> in_offsets_, out_offsets_;
  size_t broken_staging_ = 0, tap_offset_ = 0, keys_staging_ = 0;
  std::vector<std::pair<int, size_t>> key_slots_;  // (random node, arena offset of its 64-bit key)
  // (node checking its input values, arena offset of its error word: ~0 or the first bad position)
  std::vector<std::pair<int, size_t>> error_slots_;
  size_t errors_staging_ = 0;
  std::vector<std::pair<int, size_t>> workspace_slots_;  // (node, arena offset of its scratch)

  // Safe mode (Options.safe): every value in its own slot between canary guards, NaN-filled at
  // each run; after every dispatch canary_check.comp reads every guard (run_checked).
  struct Guard {
    size_t offset = 0, bytes = 0;  // in the arena
    std::string owner;             // "after value 'x'"
  };
  std::vector<Guard> guards_;
  std::vector<std::pair<size_t, size_t>> fresh_;  // (offset, bytes) of each non-constant value
  size_t broken_at_ = 0;                          // the check's result word in the arena
  Dispatch check_;

  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkCommandPool commands_ = VK_NULL_HANDLE;
  VkCommandBuffer run_cb_ = VK_NULL_HANDLE;    // recorded once, replayed by every run
  VkCommandBuffer eager_cb_ = VK_NULL_HANDLE;  // re-recorded per node in tapped runs
  VkFence fence_ = VK_NULL_HANDLE;
  bool in_flight_ = false;  // submitted, fence not yet waited for
};

}  // namespace lockstep::vulkan
