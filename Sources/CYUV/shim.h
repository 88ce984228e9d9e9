#pragma once
// libyuv (Debian's libyuv-dev): the picture scaler `recbot compose` places senders with.
#include <libyuv/scale.h>
