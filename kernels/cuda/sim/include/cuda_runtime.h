#pragma once
// The simulated CUDA build takes this in place of the toolkit header.
#include "../cuda_sim.h"
