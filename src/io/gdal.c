/* Rasters through GDAL and coordinate reference systems (CRS) through OGR: the input entry points
 * ts_raster_read and ts_raster_stack_read (ESRI ASCII goes to our own reader, asc.c, with the CRS
 * of its .prj sidecar; every other raster to GDAL), the GeoTIFF writer and the CRS helpers. GDAL
 * never prints: a quiet error handler keeps its messages, which are folded into our one-line
 * errors. Built without GDAL (TESSERA_HAVE_GDAL 0), only ESRI ASCII is read and a CRS is the WKT
 * text as given. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/io.h"
#include "tessera/raster.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if TESSERA_HAVE_GDAL
#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>
#endif

enum { PRJ_MAX_BYTES = 1 << 20 };

/* Copies text into buf on one line (line breaks become spaces), cut with "..." to fit. */
static const char *one_line(const char *text, char *buf, size_t size) {
  size_t n = 0, length = strlen(text);
  for (; n + 1 < size && text[n]; n++)
    buf[n] = text[n] == '\n' || text[n] == '\r' ? ' ' : text[n];
  buf[n] = '\0';
  if (n < length && size > 4)
    memcpy(buf + size - 4, "...", 4);
  return buf;
}

/* A copy of text without leading and trailing white space; NULL when out of memory. */
static char *trimmed_copy(const char *text) {
  while (isspace((unsigned char)*text))
    text++;
  size_t n = strlen(text);
  while (n > 0 && isspace((unsigned char)text[n - 1]))
    n--;
  char *copy = malloc(n + 1);
  if (copy) {
    memcpy(copy, text, n);
    copy[n] = '\0';
  }
  return copy;
}

/* ------------------------------------------------------------------ GDAL and OGR */

#if TESSERA_HAVE_GDAL

static const long long GDAL_MAX_CELLS = 1LL << 31;

/* Every GDAL call runs between gdal_begin and gdal_end: drivers registered, messages kept
 * (CPLGetLastErrorMsg) instead of printed. */
static void gdal_begin(void) {
  GDALAllRegister();
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
}

static void gdal_end(void) { CPLPopErrorHandler(); }

/* GDAL's last message as ": message" on one line, or "" when GDAL gave none. */
static const char *gdal_reason(char *buf, size_t size) {
  const char *message = CPLGetLastErrorMsg();
  if (!message || !message[0] || size < 3)
    return "";
  buf[0] = ':', buf[1] = ' ';
  one_line(message, buf + 2, size - 2);
  return buf;
}

/* The CRS given by text: "EPSG:2154", WKT (ESRI's too), a PROJ string; NULL when it is none. */
static OGRSpatialReferenceH srs_parse(const char *text) {
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  if (srs && OSRSetFromUserInput(srs, text) == OGRERR_NONE)
    return srs;
  if (srs)
    OSRDestroySpatialReference(srs);
  return NULL;
}

/* The WKT of srs, malloc'ed; NULL when it cannot be exported. */
static char *srs_wkt(OGRSpatialReferenceH srs) {
  char *wkt = NULL, *copy = NULL;
  if (OSRExportToWkt(srs, &wkt) == OGRERR_NONE && wkt)
    copy = trimmed_copy(wkt);
  CPLFree(wkt);
  return copy;
}

/* Replaces a CRS without an authority code by the EPSG CRS that OGR identifies with confidence
 * (as GDAL's shapefile driver does with .prj files), so that labels and GeoTIFF keys give it. */
static void srs_identify(OGRSpatialReferenceH *srs) {
  if (OSRGetAuthorityCode(*srs, NULL))
    return;
  int count = 0, *confidence = NULL;
  OGRSpatialReferenceH *matches = OSRFindMatches(*srs, NULL, &count, &confidence);
  if (matches && count == 1 && confidence[0] >= 90) {
    OSRDestroySpatialReference(*srs);
    *srs = OSRClone(matches[0]);
  }
  OSRFreeSRSArray(matches);
  CPLFree(confidence);
}

/* Reads the CRS of a .prj file's text into *crs (WKT). */
static ts_status prj_parse(const char *prj, const char *text, char **crs) {
  char message[512];
  gdal_begin();
  OGRSpatialReferenceH srs = srs_parse(text);
  ts_status st = TS_OK;
  if (!srs) {
    st = ts_error(TS_ERR_INPUT, "%s: not a coordinate reference system%s", prj,
                  gdal_reason(message, sizeof message));
  } else {
    srs_identify(&srs);
    if (!(*crs = srs_wkt(srs)))
      st = ts_error(TS_ERR_INPUT, "%s: cannot express the coordinate reference system as WKT%s",
                    prj, gdal_reason(message, sizeof message));
    OSRDestroySpatialReference(srs);
  }
  gdal_end();
  return st;
}

/* Opens a raster; the error tells a file that is not there from one GDAL cannot read. */
static ts_status gdal_open(const char *path, GDALDatasetH *ds) {
  char message[512];
  *ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
  if (*ds)
    return TS_OK;
  struct stat sb;
  if (stat(path, &sb) == 0)
    return ts_error(TS_ERR_INPUT, "%s: not a raster that GDAL can read%s", path,
                    gdal_reason(message, sizeof message));
  if (!strchr(path, ':')) /* a plain file name, not a GDAL dataset name such as NETCDF:"f":v */
    return ts_error(TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  return ts_error(TS_ERR_INPUT, "%s: cannot open%s", path, gdal_reason(message, sizeof message));
}

/* The error for a dataset without raster bands: it holds subdatasets (several NetCDF variables),
 * named in the message, or nothing to read. */
static ts_status gdal_no_band(GDALDatasetH ds, const char *path) {
  char **sub = GDALGetMetadata(ds, "SUBDATASETS");
  char names[600] = "";
  for (int k = 0; sub && sub[k]; k++) {
    const char *name = strstr(sub[k], "_NAME=");
    size_t used = strlen(names);
    if (name)
      snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", name + 6);
  }
  if (names[0])
    return ts_error(TS_ERR_INPUT, "%s: holds several grids; name one of them: %s", path, names);
  return ts_error(TS_ERR_INPUT, "%s: holds no raster band", path);
}

/* The grid of a dataset: size, corner and cell size into geom, and whether row 0 of the file is
 * the north row; refuses what a ts_raster cannot hold. */
static ts_status gdal_geometry(GDALDatasetH ds, const char *path, ts_raster *geom, int *north_up) {
  int nx = GDALGetRasterXSize(ds), ny = GDALGetRasterYSize(ds);
  if ((long long)nx * ny > GDAL_MAX_CELLS)
    return ts_error(TS_ERR_INPUT, "%s: grid of %d x %d cells is larger than 2^31 cells", path, nx,
                    ny);
  double gt[6];
  if (GDALGetGeoTransform(ds, gt) != CE_None)
    return ts_error(TS_ERR_INPUT,
                    "%s: grid has no georeferencing (no geotransform); give it one (e.g. "
                    "gdal_translate -a_ullr)",
                    path);
  for (int k = 0; k < 6; k++)
    if (!isfinite(gt[k]))
      return ts_error(TS_ERR_INPUT, "%s: geotransform has a non-finite term", path);
  if (gt[2] != 0 || gt[4] != 0)
    return ts_error(TS_ERR_INPUT,
                    "%s: grid is rotated (geotransform %.17g %.17g %.17g %.17g %.17g %.17g); "
                    "warp it to a north-up grid (e.g. gdalwarp)",
                    path, gt[0], gt[1], gt[2], gt[3], gt[4], gt[5]);
  if (!(gt[1] > 0))
    return ts_error(TS_ERR_INPUT,
                    "%s: columns run from east to west (pixel width %g in the geotransform); "
                    "warp it to a north-up grid (e.g. gdalwarp)",
                    path, gt[1]);
  if (fabs(fabs(gt[5]) - gt[1]) > 1e-9 * gt[1])
    return ts_error(TS_ERR_INPUT,
                    "%s: pixels are not square (dx %.17g, dy %.17g); resample to square cells "
                    "(e.g. gdalwarp -tr %.17g %.17g)",
                    path, gt[1], fabs(gt[5]), gt[1], gt[1]);
  *north_up = gt[5] < 0;
  geom->ncols = nx;
  geom->nrows = ny;
  geom->cellsize = gt[1];
  geom->xll = gt[0];
  geom->yll = *north_up ? gt[3] + ny * gt[5] : gt[3];
  return TS_OK;
}

/* Marks missing cells with one NODATA value: the declared one when it is finite, else a value
 * that never occurs; NaN cells (and cells equal to a declared infinite value) become NODATA. */
static void gdal_set_nodata(ts_raster *r, int declared, double value) {
  size_t n = (size_t)r->ncols * r->nrows;
  double nodata = value;
  if (!declared || !isfinite(value)) {
    double lowest = INFINITY;
    int taken = 0;
    nodata = -9999;
    for (size_t c = 0; c < n; c++)
      if (isfinite(r->v[c])) {
        lowest = fmin(lowest, r->v[c]);
        taken |= r->v[c] == nodata;
      }
    if (taken)
      nodata = lowest - fabs(lowest) - 1; /* below every value */
  }
  for (size_t c = 0; c < n; c++)
    if (isnan(r->v[c]) || (declared && r->v[c] == value))
      r->v[c] = nodata;
  r->nodata = nodata;
}

/* Reads band b (1-based) into out, rows flipped to south first when the file is north-up. */
static ts_status gdal_read_band(GDALDatasetH ds, int b, const char *path, const ts_raster *geom,
                                int north_up, ts_raster *out) {
  char message[512];
  int nx = geom->ncols, ny = geom->nrows;
  GDALRasterBandH band = GDALGetRasterBand(ds, b);
  TS_CALL(ts_raster_alloc(out, nx, ny, geom->xll, geom->yll, geom->cellsize, 0));
  for (int row = 0; row < ny; row++) {
    int j = north_up ? ny - 1 - row : row;
    if (GDALRasterIO(band, GF_Read, 0, row, nx, 1, out->v + (size_t)j * nx, nx, 1, GDT_Float64, 0,
                     0) != CE_None) {
      ts_raster_free(out);
      return ts_error(TS_ERR_INPUT, "%s: cannot read band %d%s", path, b,
                      gdal_reason(message, sizeof message));
    }
  }
  int declared = 0;
  double value = GDALGetRasterNoDataValue(band, &declared);
  gdal_set_nodata(out, declared, value);
  return TS_OK;
}

/* Seconds in one unit of a CF time ("hours since 2000-01-01"); 0 when the units are not such. */
static double time_unit_seconds(const char *units) {
  static const struct {
    const char *name;
    double seconds;
  } known[] = {{"seconds", 1}, {"second", 1},   {"s", 1},        {"minutes", 60},
               {"minute", 60}, {"min", 60},     {"hours", 3600}, {"hour", 3600},
               {"h", 3600},    {"days", 86400}, {"day", 86400},  {"d", 86400}};
  char word[32], since[8];
  if (!units || sscanf(units, "%31s %7s", word, since) != 2 || strcmp(since, "since") != 0)
    return 0;
  for (char *p = word; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (strcmp(word, known[k].name) == 0)
      return known[k].seconds;
  return 0;
}

/* Times of the bands in seconds since the first band's, from NetCDF's NETCDF_DIM_time and the
 * units of the time variable; NAN for every band when the file does not give them. */
static void gdal_band_times(GDALDatasetH ds, int n, double *times) {
  double unit = time_unit_seconds(GDALGetMetadataItem(ds, "time#units", NULL));
  for (int b = 0; b < n; b++) {
    const char *text = GDALGetMetadataItem(GDALGetRasterBand(ds, b + 1), "NETCDF_DIM_time", NULL);
    char *end = NULL;
    times[b] = text ? strtod(text, &end) : NAN;
    if (unit == 0 || !text || end == text || !isfinite(times[b])) {
      for (int k = 0; k < n; k++)
        times[k] = NAN;
      return;
    }
  }
  for (int b = n - 1; b >= 0; b--)
    times[b] = (times[b] - times[0]) * unit;
}

/* Reads bands 1..n of a raster (all of them when max_bands is 0) with GDAL. */
static ts_status gdal_read_stack(const char *path, int max_bands, ts_raster_stack *out) {
  char message[512];
  memset(out, 0, sizeof *out);
  gdal_begin();
  GDALDatasetH ds = NULL;
  char *crs = NULL;
  ts_raster geom = {0};
  int north_up = 0, n = 0;
  ts_status st = gdal_open(path, &ds);
  if (st == TS_OK && (n = GDALGetRasterCount(ds)) < 1)
    st = gdal_no_band(ds, path);
  if (st == TS_OK)
    st = gdal_geometry(ds, path, &geom, &north_up);
  OGRSpatialReferenceH srs = st == TS_OK ? GDALGetSpatialRef(ds) : NULL;
  if (srs && !(crs = srs_wkt(srs)))
    st = ts_error(TS_ERR_INPUT, "%s: cannot express the coordinate reference system as WKT%s", path,
                  gdal_reason(message, sizeof message));
  if (max_bands > 0 && n > max_bands)
    n = max_bands;
  if (st == TS_OK) {
    out->frames = calloc((size_t)n, sizeof *out->frames);
    out->times = malloc((size_t)n * sizeof *out->times);
    if (!out->frames || !out->times)
      st = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  }
  for (int b = 0; b < n && st == TS_OK; b++) {
    st = gdal_read_band(ds, b + 1, path, &geom, north_up, &out->frames[b]);
    if (st == TS_OK) {
      out->n++;
      if (crs && !(out->frames[b].crs = trimmed_copy(crs)))
        st = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    }
  }
  if (st == TS_OK)
    gdal_band_times(ds, n, out->times);
  if (ds)
    GDALClose(ds);
  gdal_end();
  free(crs);
  if (st != TS_OK)
    ts_raster_stack_free(out);
  return st;
}

ts_status ts_geotiff_write(const char *path, const ts_raster *r) {
  char tmp[4200], message[512];
  size_t nx = (size_t)r->ncols, ny = (size_t)r->nrows;
  float *values = malloc(nx * ny * sizeof *values);
  if (!values)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  if (ts_make_temp(path, tmp, sizeof tmp) != TS_OK) {
    free(values);
    return TS_ERR_IO;
  }
  for (size_t row = 0; row < ny; row++) { /* north row first */
    const double *src = r->v + (ny - 1 - row) * nx;
    for (size_t i = 0; i < nx; i++)
      values[row * nx + i] = (float)(ts_raster_is_nodata(r, src[i]) ? r->nodata : src[i]);
  }
  gdal_begin();
  CPLSetThreadLocalConfigOption("GDAL_PAM_ENABLED", "NO"); /* no .aux.xml beside the temporary */
  char **options = CSLSetNameValue(NULL, "COMPRESS", "DEFLATE");
  options = CSLSetNameValue(options, "TILED", "YES");
  options = CSLSetNameValue(options, "BLOCKXSIZE", "256");
  options = CSLSetNameValue(options, "BLOCKYSIZE", "256");
  GDALDriverH driver = GDALGetDriverByName("GTiff");
  GDALDatasetH ds =
      driver ? GDALCreate(driver, tmp, r->ncols, r->nrows, 1, GDT_Float32, options) : NULL;
  CSLDestroy(options);
  double gt[6] = {r->xll, r->cellsize, 0, r->yll + r->nrows * r->cellsize, 0, -r->cellsize};
  int ok = ds && GDALSetGeoTransform(ds, gt) == CE_None;
  if (ok && r->crs) {
    OGRSpatialReferenceH srs = srs_parse(r->crs);
    ok = srs && GDALSetSpatialRef(ds, srs) == CE_None;
    if (srs)
      OSRDestroySpatialReference(srs);
  }
  GDALRasterBandH band = ok ? GDALGetRasterBand(ds, 1) : NULL;
  ok = ok && GDALSetRasterNoDataValue(band, r->nodata) == CE_None &&
       GDALRasterIO(band, GF_Write, 0, 0, r->ncols, r->nrows, values, r->ncols, r->nrows,
                    GDT_Float32, 0, 0) == CE_None;
  if (ds) {
    if (ok)
      CPLErrorReset();
    GDALClose(ds); /* flushes: failures show as an error after the reset */
    ok = ok && CPLGetLastErrorType() != CE_Failure && CPLGetLastErrorType() != CE_Fatal;
  }
  ts_status st = TS_OK;
  if (!ok)
    st = ts_error(TS_ERR_IO, "%s: cannot write GeoTIFF%s", path,
                  gdal_reason(message, sizeof message));
  CPLSetThreadLocalConfigOption("GDAL_PAM_ENABLED", NULL);
  gdal_end();
  if (st == TS_OK)
    st = ts_commit_temp_file(tmp, path);
  else
    remove(tmp);
  free(values);
  return st;
}

ts_status ts_crs_from_user(const char *text, char **wkt) {
  char shown[96], message[512];
  *wkt = NULL;
  gdal_begin();
  OGRSpatialReferenceH srs = srs_parse(text);
  ts_status st = TS_OK;
  if (!srs)
    st = ts_error(TS_ERR_INPUT, "'%s' is not a coordinate reference system%s",
                  one_line(text, shown, sizeof shown), gdal_reason(message, sizeof message));
  else if (!(*wkt = srs_wkt(srs)))
    st = ts_error(TS_ERR_INPUT, "'%s': cannot express the coordinate reference system as WKT%s",
                  one_line(text, shown, sizeof shown), gdal_reason(message, sizeof message));
  if (srs)
    OSRDestroySpatialReference(srs);
  gdal_end();
  return st;
}

int ts_crs_same(const char *a, const char *b) {
  if (!a || !b)
    return !a && !b;
  if (strcmp(a, b) == 0)
    return 1;
  gdal_begin();
  OGRSpatialReferenceH sa = srs_parse(a), sb = srs_parse(b);
  int same = sa && sb && OSRIsSame(sa, sb);
  if (sa)
    OSRDestroySpatialReference(sa);
  if (sb)
    OSRDestroySpatialReference(sb);
  gdal_end();
  return same;
}

void ts_crs_label(const char *wkt, char *buf, size_t size) {
  if (size == 0)
    return;
  buf[0] = '\0';
  if (!wkt)
    return;
  gdal_begin();
  OGRSpatialReferenceH srs = srs_parse(wkt);
  const char *authority = srs ? OSRGetAuthorityName(srs, NULL) : NULL;
  const char *code = srs ? OSRGetAuthorityCode(srs, NULL) : NULL;
  if (authority && code)
    snprintf(buf, size, "%s:%s", authority, code);
  else
    one_line(wkt, buf, size);
  if (srs)
    OSRDestroySpatialReference(srs);
  gdal_end();
}

int ts_crs_is_geographic(const char *wkt) {
  if (!wkt)
    return 0;
  gdal_begin();
  OGRSpatialReferenceH srs = srs_parse(wkt);
  int geographic = srs && OSRIsGeographic(srs);
  if (srs)
    OSRDestroySpatialReference(srs);
  gdal_end();
  return geographic;
}

ts_status ts_crs_to_esri(const char *wkt, char **esri) {
  char message[512];
  *esri = NULL;
  gdal_begin();
  OGRSpatialReferenceH srs = srs_parse(wkt);
  if (srs && OSRMorphToESRI(srs) == OGRERR_NONE)
    *esri = srs_wkt(srs);
  ts_status st = *esri ? TS_OK
                       : ts_error(TS_ERR_IO, "cannot express the CRS as ESRI WKT%s",
                                  gdal_reason(message, sizeof message));
  if (srs)
    OSRDestroySpatialReference(srs);
  gdal_end();
  return st;
}

const char *ts_gdal_version(void) { return GDALVersionInfo("RELEASE_NAME"); }

/* ------------------------------------------------------------------ without GDAL */

#else

static ts_status prj_parse(const char *prj, const char *text, char **crs) {
  if (!(*crs = trimmed_copy(text)))
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", prj);
  return TS_OK;
}

ts_status ts_geotiff_write(const char *path, const ts_raster *r) {
  (void)r;
  return ts_error(TS_ERR_INTERNAL,
                  "%s: cannot write GeoTIFF: this build has no GDAL (configure with "
                  "-DTESSERA_GDAL=ON)",
                  path);
}

ts_status ts_crs_from_user(const char *text, char **wkt) {
  char shown[96];
  if (!(*wkt = trimmed_copy(text)))
    return ts_error(TS_ERR_NOMEM, "out of memory");
  if (!(*wkt)[0]) {
    free(*wkt);
    *wkt = NULL;
    return ts_error(TS_ERR_INPUT, "'%s' is not a coordinate reference system",
                    one_line(text, shown, sizeof shown));
  }
  return TS_OK;
}

int ts_crs_same(const char *a, const char *b) {
  if (!a || !b)
    return !a && !b;
  return strcmp(a, b) == 0;
}

void ts_crs_label(const char *wkt, char *buf, size_t size) {
  if (size > 0)
    one_line(wkt ? wkt : "", buf, size);
}

ts_status ts_crs_to_esri(const char *wkt, char **esri) {
  if (!(*esri = trimmed_copy(wkt)))
    return ts_error(TS_ERR_NOMEM, "out of memory");
  return TS_OK;
}

int ts_crs_is_geographic(const char *wkt) {
  (void)wkt;
  return 0;
}

const char *ts_gdal_version(void) { return NULL; }

#endif

/* ------------------------------------------------------------------ both builds */

/* The CRS of the .prj sidecar of the ESRI ASCII grid at path; *crs stays NULL without one. */
static ts_status read_prj(const char *path, char **crs) {
  char prj[4096];
  *crs = NULL;
  TS_CALL(ts_prj_path(path, prj, sizeof prj));
  FILE *f = fopen(prj, "rb");
  if (!f)
    return errno == ENOENT ? TS_OK
                           : ts_error(TS_ERR_IO, "%s: cannot open: %s", prj, strerror(errno));
  char *text = malloc(PRJ_MAX_BYTES + 1);
  size_t n = text ? fread(text, 1, PRJ_MAX_BYTES + 1, f) : 0;
  int failed = ferror(f);
  fclose(f);
  ts_status st = TS_OK;
  if (!text)
    st = ts_error(TS_ERR_NOMEM, "%s: out of memory", prj);
  else if (failed)
    st = ts_error(TS_ERR_IO, "%s: read error", prj);
  else if (n > PRJ_MAX_BYTES)
    st = ts_error(TS_ERR_INPUT, "%s: larger than %d bytes: not a .prj file", prj, PRJ_MAX_BYTES);
  else if (memchr(text, '\0', n))
    st = ts_error(TS_ERR_INPUT, "%s: not a text file", prj);
  if (st == TS_OK) {
    text[n] = '\0';
    st = prj_parse(prj, text, crs);
  }
  free(text);
  return st;
}

ts_status ts_raster_read(const char *path, ts_raster *out) {
  out->v = NULL;
  out->crs = NULL;
  if (!ts_asc_detect(path)) {
#if TESSERA_HAVE_GDAL
    ts_raster_stack stack;
    TS_CALL(gdal_read_stack(path, 1, &stack));
    *out = stack.frames[0];
    free(stack.frames);
    free(stack.times);
    return TS_OK;
#else
    struct stat sb;
    if (stat(path, &sb) == 0)
      return ts_error(TS_ERR_INPUT,
                      "%s: not an ESRI ASCII grid, and this build has no GDAL (configure with "
                      "-DTESSERA_GDAL=ON)",
                      path);
      /* not there: ts_asc_read says so */
#endif
  }
  TS_CALL(ts_asc_read(path, out));
  ts_status st = read_prj(path, &out->crs);
  if (st != TS_OK)
    ts_raster_free(out);
  return st;
}

ts_status ts_raster_stack_read(const char *path, ts_raster_stack *out) {
  memset(out, 0, sizeof *out);
#if TESSERA_HAVE_GDAL
  if (!ts_asc_detect(path))
    return gdal_read_stack(path, 0, out);
#endif
  out->frames = calloc(1, sizeof *out->frames);
  out->times = malloc(sizeof *out->times);
  ts_status st = out->frames && out->times ? ts_raster_read(path, out->frames)
                                           : ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  if (st != TS_OK) {
    ts_raster_stack_free(out);
    return st;
  }
  out->n = 1;
  out->times[0] = NAN;
  return TS_OK;
}

void ts_raster_stack_free(ts_raster_stack *stack) {
  if (!stack)
    return;
  for (int k = 0; k < stack->n; k++)
    ts_raster_free(&stack->frames[k]);
  free(stack->frames);
  free(stack->times);
  memset(stack, 0, sizeof *stack);
}
