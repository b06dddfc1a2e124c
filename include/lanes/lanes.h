// lanes: static automatic batching for C++. Include this one header.
#pragma once

#include "lanes/array_ops.h"
#include "lanes/autodiff.h"
#include "lanes/collectives.h"
#include "lanes/compile.h"
#include "lanes/control_flow.h"
#include "lanes/dtype.h"
#include "lanes/error.h"
#include "lanes/explain.h"
#include "lanes/graph.h"
#include "lanes/ops.h"
#include "lanes/parallel.h"
#include "lanes/primitive.h"
#include "lanes/random.h"
#include "lanes/tensor.h"
#include "lanes/tree.h"
#include "lanes/vmap.h"
