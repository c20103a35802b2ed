// `lockstep default -o DIR`: writes the embedded default (the seed-shaped VITS flow that
// `lockstep check` runs) as DIR/seed_flow.onnx with its inputs as .npy, for other runtimes.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/npy.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {

int cmd_default(const DefaultArgs& args) {
  namespace fs = std::filesystem;
  if (args.out_dir.empty()) throw Error(ErrorCode::InvalidArgument, "default: give the output folder with -o DIR");
  fs::create_directories(args.out_dir);
  const std::string model = args.out_dir + "/seed_flow.onnx";
  zoo::write_seed_flow_onnx(model, args.seed);
  std::vector<Tensor> inputs = zoo::seed_flow_inputs();
  write_npy(args.out_dir + "/z_p.npy", inputs.at(0));
  write_npy(args.out_dir + "/y_mask.npy", inputs.at(1));
  std::cout << model << "\n" << args.out_dir << "/z_p.npy\n" << args.out_dir << "/y_mask.npy\n";
  return kExitOk;
}

}  // namespace lockstep::cli
