/* Validation: the flood study of the README ("A flood study, step by step"),
 * examples/flood_study/study.ini, run through the CLI ($TESSERA_BINARY) for its first 30 minutes
 * (--set time.end=1800) into a temporary directory (--out):
 *
 *  1. the run exits 0 and writes summary.json, max_h.tif, max_hazard.tif, the snapshot of the end
 *     as GeoTIFF, the run's NetCDF file swe.nc, gauges.csv and gauges.png;
 *  2. summary.json: "crs": "EPSG:2154" (the DEM's Lambert-93); the volume budget closes,
 *     |rel_error| < 1e-6 in float (1e-12 in double); rain, inflow and losses are all > 0;
 *  3. the rain is the storm's volume: the hyetograph storm.csv (10, 25, 60 mm/h for 10 minutes
 *     each up to 1800 s, 15.83 mm) on every active cell, to 1e-6;
 *  4. the inflow is the hydrograph's volume (inflow.csv, linear between its points: 70,500 m3
 *     up to 1800 s) to 2 %: the west side injects exactly the hydrograph, and the east outflow side
 *     lets in a little where the flow at its cells turns inwards (0.6 % at 1800 s);
 *  5. the river has reached the first gauge (river_up, 510 m downstream of the inflow): depth
 *     > 0.1 m at the end;
 *  6. max_h.tif has the geotransform of dem.tif (exactly) and its CRS (EPSG code 2154), read with
 *     GDAL's C API.
 *
 * Skipped (exit 77) when the CLI is missing, and in a build without GDAL (the study's grids are
 * GeoTIFF). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytic.h"
#include "tessera/raster.h"
#include "unit/test_files.h"

#if TESSERA_HAVE_GDAL
#include <gdal.h>
#include <ogr_srs_api.h>

static const double END = 1800; /* s: the shortened run */

/* The number after "key": inside the text from `from` on (NAN when missing). */
static double json_number(const char *from, const char *key) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\":", key);
  const char *k = from ? strstr(from, quoted) : NULL;
  return k ? strtod(k + strlen(quoted), NULL) : NAN;
}

/* The string value of "key" (copied into out; "" when missing or not a string). */
static void json_string(const char *text, const char *key, char *out, size_t size) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\":", key);
  const char *k = text ? strstr(text, quoted) : NULL;
  out[0] = '\0';
  if (!k)
    return;
  k += strlen(quoted);
  while (*k == ' ')
    k++;
  if (*k == '"')
    snprintf(out, size, "%.*s", (int)strcspn(k + 1, "\""), k + 1);
}

/* The depth of gauge `id` at its last record in gauges.csv (time,id,h,surface,u,v); NAN if none. */
static double last_gauge_depth(const char *path, const char *id) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NAN;
  char line[256], name[64];
  double t, h, depth = NAN;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%lf,%63[^,],%lf", &t, name, &h) == 3 && strcmp(name, id) == 0)
      depth = h;
  fclose(f);
  return depth;
}

/* The geotransform and EPSG code of a GeoTIFF; 0 when it cannot be opened. */
static int geotiff_frame(const char *path, double gt[6], char *epsg, size_t size) {
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  epsg[0] = '\0';
  if (!ds)
    return 0;
  int ok = GDALGetGeoTransform(ds, gt) == CE_None;
  OGRSpatialReferenceH srs = GDALGetSpatialRef(ds);
  const char *code = srs ? OSRGetAuthorityCode(srs, NULL) : NULL;
  snprintf(epsg, size, "%s", code ? code : "");
  GDALClose(ds);
  return ok;
}

static int run_study(const char *cli) {
  const char *src = getenv("TESSERA_SOURCE_DIR");
  if (!src)
    src = ".";
  char dir[] = "/tmp/tessera_flood_study_XXXXXX";
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  char cmd[4096], path[1024], dem[1024];
  snprintf(dem, sizeof dem, "%s/examples/flood_study/dem.tif", src);
  snprintf(cmd, sizeof cmd,
           "\"%s\" run \"%s/examples/flood_study/study.ini\" --set time.end=%g --out %s --quiet",
           cli, src, END, dir);
  double t0 = val_now();
  int rc = system(cmd);
  printf("%s: exit %d, %.1f s\n", cmd, rc, val_now() - t0);
  CHECK(rc == 0, "the flood study ran (exit %d)", rc);

  static const char *const outputs[] = {"summary.json", "max_h.tif",     "max_hazard.tif",
                                        "arrival.tif",  "h_t001800.tif", "swe.nc",
                                        "gauges.csv",   "gauges.png",    "depth_t001800.png"};
  for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, outputs[k]);
    CHECK(file_exists(path), "%s written", outputs[k]);
  }

  snprintf(path, sizeof path, "%s/summary.json", dir);
  char *js = read_file(path);
  char crs[64], precision[16];
  json_string(js, "crs", crs, sizeof crs);
  json_string(js, "precision", precision, sizeof precision);
  CHECK(strcmp(crs, "EPSG:2154") == 0, "summary.json crs = \"%s\" (Lambert-93, the DEM's)", crs);
  const char *budget = js ? strstr(js, "\"volume_budget\":") : NULL;
  double rain = json_number(budget, "rain"), inflow = json_number(budget, "inflow");
  double outflow = json_number(budget, "outflow"), losses = json_number(budget, "losses");
  double final = json_number(budget, "final"), rel = json_number(budget, "rel_error");
  double cells = json_number(js, "active_cells"), dx = json_number(js, "dx");
  printf("volume budget (m3): rain %.1f, inflow %.1f, outflow %.1f, losses %.1f, final %.1f, "
         "rel_error %.3g (%s)\n",
         rain, inflow, outflow, losses, final, rel, precision);
  double tol = strcmp(precision, "double") == 0 ? 1e-12 : 1e-6;
  CHECK(fabs(rel) < tol, "the volume budget closes: rel_error %.3g (tolerance %.0e, %s)", rel, tol,
        precision);
  CHECK(rain > 0 && inflow > 0 && losses > 0, "rain, inflow and losses all > 0");

  double storm = (10 + 25 + 60) / 6.0 * 1e-3; /* m: storm.csv up to 1800 s */
  double expect_rain = storm * cells * dx * dx;
  CHECK(fabs(rain - expect_rain) < 1e-6 * expect_rain,
        "rain = the storm's %.2f mm on %.0f cells of %g m: %.1f m3 (expected %.1f)", storm * 1e3,
        cells, dx, rain, expect_rain);
  /* inflow.csv: 10 m3/s at 0, 40 at 1200, 150 at 2400 s, linear in between */
  double expect_inflow = 0.5 * (10 + 40) * 1200 + 0.5 * (40 + (40 + 110 * 0.5)) * 600;
  CHECK(fabs(inflow - expect_inflow) < 0.02 * expect_inflow,
        "inflow %.1f m3 = the hydrograph's %.1f m3 to 2 %% (%.2f %%)", inflow, expect_inflow,
        100 * (inflow - expect_inflow) / expect_inflow);

  snprintf(path, sizeof path, "%s/gauges.csv", dir);
  char *gauges = read_file(path);
  CHECK(gauges && strncmp(gauges, "time,id,h,surface,u,v", 21) == 0,
        "gauges.csv has the header time,id,h,surface,u,v");
  free(gauges);
  double h_river = last_gauge_depth(path, "river_up");
  CHECK(h_river > 0.1, "the river reached gauge river_up: depth %.3f m at %g s", h_river, END);
  free(js);

  GDALAllRegister();
  double gt_dem[6], gt_max[6];
  char epsg_dem[32], epsg_max[32];
  snprintf(path, sizeof path, "%s/max_h.tif", dir);
  int ok_dem = geotiff_frame(dem, gt_dem, epsg_dem, sizeof epsg_dem);
  int ok_max = geotiff_frame(path, gt_max, epsg_max, sizeof epsg_max);
  CHECK(ok_dem && ok_max, "GDAL opens dem.tif and max_h.tif");
  if (ok_dem && ok_max) {
    CHECK(memcmp(gt_dem, gt_max, sizeof gt_dem) == 0,
          "max_h.tif has dem.tif's geotransform: origin (%.1f, %.1f), pixel %g x %g", gt_max[0],
          gt_max[3], gt_max[1], gt_max[5]);
    CHECK(strcmp(epsg_dem, "2154") == 0 && strcmp(epsg_max, epsg_dem) == 0,
          "max_h.tif's CRS is EPSG:%s, dem.tif's EPSG:%s", epsg_max, epsg_dem);
  }

  if (val_failures == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  } else {
    printf("files kept in %s\n", dir);
  }
  return val_finish();
}
#endif

int main(void) {
  const char *cli = val_cli();
  if (!cli)
    return VAL_SKIP;
#if TESSERA_HAVE_GDAL
  return run_study(cli);
#else
  printf("SKIP: this build has no GDAL, and the study's grids are GeoTIFF\n");
  return VAL_SKIP;
#endif
}
