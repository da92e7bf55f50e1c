#pragma once
/// What a captured CUDA graph uses stays alive while the graph can be replayed: the runtime
/// hands it to the graph being captured as a user object (cuUserObjectCreate), which the
/// graph and every executable graph instantiated from it hold until they are destroyed. So an
/// optimizer, an executor or a grown workspace can go while torch still replays the graph.
///
/// The driver calls a user object's destructor on its own thread, where CUDA must not be
/// called; releasing a hold frees device memory and unloads modules, so the destructor only
/// queues it, and the next launch outside capture (of any fusion) releases what is queued.

#include "runtime/cuda/cuda_device.h"

#include <memory>
#include <vector>

namespace widefuse {

/// What one captured step uses: modules, tables, tickets, workspaces, kept results.
using GraphHold = std::vector<std::shared_ptr<const void>>;

/// Gives `hold` to the graph `stream` is capturing into; it is released after that graph and
/// its executable graphs are destroyed. Throws Error when the driver cannot say which graph
/// the stream captures into (then nothing is captured safely).
void holdWhileGraphLives(const CudaDevice& device, void* stream, GraphHold hold);

/// Releases the holds of destroyed graphs. Not under capture: it may free device memory.
void releaseFinishedGraphHolds();

} // namespace widefuse
