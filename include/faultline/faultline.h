/* SPDX-License-Identifier: MIT */
/* faultline: everything public, in one include. */
#ifndef FAULTLINE_FAULTLINE_H
#define FAULTLINE_FAULTLINE_H

#include <faultline/log.h>
#include <faultline/opts.h>
#include <faultline/format.h>
#include <faultline/discovery.h>
#include <faultline/dispatch.h>
#include <faultline/patch.h>
#include <faultline/points.h>
#include <faultline/deopt.h>
#include <faultline/region.h>

#endif /* FAULTLINE_FAULTLINE_H */
