/* PNG maps of water depth: hill-shaded bed in grey, water in a blue colour map blended over it,
 * a colour bar with labels on the right and a title, drawn with a built-in 5x7 bitmap font and
 * written with libpng's simplified API. North is up. */
#include "tessera/io.h"

#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

enum {
  MIN_WIDTH_UNSCALED = 400, /* grids at least this wide get one pixel per cell */
  TARGET_WIDTH = 600,       /* smaller grids are scaled up to at least this width */
  TEXT_SCALE = 2,
  GLYPH_W = 5,
  GLYPH_H = 7,
  GLYPH_ADVANCE = (GLYPH_W + 1) * TEXT_SCALE,
  MARGIN = 10,
  BAR_WIDTH = 20,
  MIN_BAR_HEIGHT = 150,
  LABEL_CHARS = 9 /* room reserved for a colour bar label */
};

static const double WATER_ALPHA = 0.85;

/* One 5x7 glyph: 7 rows, bit 4 is the leftmost pixel. */
typedef struct glyph {
  char c;
  unsigned char rows[GLYPH_H];
} glyph;

static const glyph font[] = {
    {'0', {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}},
    {'1', {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'2', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}},
    {'3', {0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e}},
    {'4', {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}},
    {'5', {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}},
    {'6', {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}},
    {'7', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}},
    {'9', {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}},
    {'A', {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'B', {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}},
    {'C', {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}},
    {'D', {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}},
    {'E', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}},
    {'F', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}},
    {'G', {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}},
    {'H', {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'I', {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}},
    {'M', {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'P', {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}},
    {'Q', {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}},
    {'R', {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}},
    {'S', {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}},
    {'T', {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}},
    {'X', {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}},
    {'a', {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e}},
    {'c', {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e}},
    {'d', {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f}},
    {'e', {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e}},
    {'f', {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'m', {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e}},
    {'p', {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e}},
    {'t', {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a}},
    {'x', {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'z', {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}},
    {'=', {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}},
    {'-', {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}},
    {':', {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
};

typedef struct image {
  int width, height;
  unsigned char *rgb;
} image;

typedef struct colour {
  unsigned char r, g, b;
} colour;

static void put_pixel(image *im, int x, int y, colour c) {
  if (x < 0 || y < 0 || x >= im->width || y >= im->height)
    return;
  unsigned char *p = im->rgb + 3 * ((size_t)y * im->width + x);
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

static void fill_rect(image *im, int x0, int y0, int w, int h, colour c) {
  for (int y = y0; y < y0 + h; y++)
    for (int x = x0; x < x0 + w; x++)
      put_pixel(im, x, y, c);
}

static const glyph *find_glyph(char c) {
  for (size_t k = 0; k < sizeof font / sizeof font[0]; k++)
    if (font[k].c == c)
      return &font[k];
  return NULL;
}

static int text_width(const char *text) { return (int)strlen(text) * GLYPH_ADVANCE; }

/* Draws text with its top-left corner at (x, y); characters without a glyph are blank. */
static void draw_text(image *im, int x, int y, const char *text, colour c) {
  for (; *text; text++, x += GLYPH_ADVANCE) {
    const glyph *g = find_glyph(*text);
    if (!g)
      continue;
    for (int row = 0; row < GLYPH_H; row++)
      for (int col = 0; col < GLYPH_W; col++)
        if (g->rows[row] & (1u << (GLYPH_W - 1 - col)))
          fill_rect(im, x + col * TEXT_SCALE, y + row * TEXT_SCALE, TEXT_SCALE, TEXT_SCALE, c);
  }
}

static colour mix(colour a, colour b, double t) {
  colour m = {(unsigned char)lround(a.r + (b.r - a.r) * t),
              (unsigned char)lround(a.g + (b.g - a.g) * t),
              (unsigned char)lround(a.b + (b.b - a.b) * t)};
  return m;
}

/* Blue colour map over 0..1: light cyan, mid blue, dark blue. */
static colour depth_colour(double t) {
  static const colour stops[3] = {{190, 245, 255}, {40, 130, 230}, {5, 20, 110}};
  t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
  return t < 0.5 ? mix(stops[0], stops[1], 2.0 * t) : mix(stops[1], stops[2], 2.0 * t - 1.0);
}

/* Bed slope along one axis by central differences, one-sided next to edges or inactive cells. */
static double bed_slope(const double *bed, size_t here, size_t before, size_t after, int has_before,
                        int has_after, double cellsize) {
  has_before = has_before && !isnan(bed[before]);
  has_after = has_after && !isnan(bed[after]);
  if (has_before && has_after)
    return (bed[after] - bed[before]) / (2.0 * cellsize);
  if (has_after)
    return (bed[after] - bed[here]) / cellsize;
  if (has_before)
    return (bed[here] - bed[before]) / cellsize;
  return 0.0;
}

/* Grey hill shade of cell (i, j), lit from the north-west at 45 degrees above the horizon. */
static colour hill_shade(const ts_raster *geom, const double *bed, int i, int j) {
  int nx = geom->ncols, ny = geom->nrows;
  size_t c = (size_t)i + (size_t)j * nx;
  double dzdx = bed_slope(bed, c, c - 1, c + 1, i > 0, i < nx - 1, geom->cellsize);
  double dzdy = bed_slope(bed, c, c - nx, c + nx, j > 0, j < ny - 1, geom->cellsize);
  double norm = sqrt(dzdx * dzdx + dzdy * dzdy + 1.0);
  const double light_x = -0.5, light_y = 0.5, light_z = sqrt(0.5); /* north-west, 45 deg */
  double lit = (-dzdx * light_x - dzdy * light_y + light_z) / norm;
  lit = lit < 0.0 ? 0.0 : lit;
  unsigned char grey = (unsigned char)lround(40.0 + 170.0 * lit);
  colour shade = {grey, grey, grey};
  return shade;
}

static colour cell_colour(const ts_raster *geom, const double *bed, const double *depth,
                          double dry_depth, double depth_max, int i, int j) {
  static const colour inactive = {232, 232, 232};
  size_t c = (size_t)i + (size_t)j * geom->ncols;
  if (isnan(bed[c]))
    return inactive;
  colour shade = hill_shade(geom, bed, i, j);
  if (!(depth[c] > dry_depth))
    return shade;
  return mix(shade, depth_colour(depth[c] / depth_max), WATER_ALPHA);
}

static void draw_colour_bar(image *im, int x0, int y0, int height, double depth_max) {
  static const colour black = {0, 0, 0};
  for (int y = 0; y < height; y++) {
    colour c = depth_colour(1.0 - (double)y / (height - 1));
    fill_rect(im, x0, y0 + y, BAR_WIDTH, 1, c);
  }
  fill_rect(im, x0 - 1, y0 - 1, BAR_WIDTH + 2, 1, black);
  fill_rect(im, x0 - 1, y0 + height, BAR_WIDTH + 2, 1, black);
  fill_rect(im, x0 - 1, y0 - 1, 1, height + 2, black);
  fill_rect(im, x0 + BAR_WIDTH, y0 - 1, 1, height + 2, black);
  for (int tick = 0; tick <= 2; tick++) {
    double value = depth_max * tick / 2.0;
    int y = y0 + (int)lround((height - 1) * (1.0 - tick / 2.0));
    char label[32];
    snprintf(label, sizeof label, "%.3g m", value);
    fill_rect(im, x0 + BAR_WIDTH, y, 5, 1, black);
    draw_text(im, x0 + BAR_WIDTH + 8, y - GLYPH_H * TEXT_SCALE / 2, label, black);
  }
}

static void draw_title(image *im, const char *title) {
  static const colour white = {255, 255, 255}, black = {0, 0, 0};
  if (!title || !*title)
    return;
  int pad = 4;
  fill_rect(im, MARGIN - pad, MARGIN - pad, text_width(title) + 2 * pad - TEXT_SCALE,
            GLYPH_H * TEXT_SCALE + 2 * pad, white);
  draw_text(im, MARGIN, MARGIN, title, black);
}

ts_status ts_png_write_depth(const char *path, const ts_raster *geom, const double *bed,
                             const double *depth, double dry_depth, double depth_max,
                             const char *title) {
  static const colour white = {255, 255, 255};
  int nx = geom->ncols, ny = geom->nrows;
  if (!(depth_max > 0.0) || !isfinite(depth_max))
    return ts_error(TS_ERR_INPUT, "%s: depth_max %g must be positive", path, depth_max);
  int scale = nx >= MIN_WIDTH_UNSCALED ? 1 : (TARGET_WIDTH + nx - 1) / nx;
  if ((long long)nx * scale > 20000 || (long long)ny * scale > 20000)
    return ts_error(TS_ERR_INPUT, "%s: grid of %d x %d cells is too large for a PNG map", path, nx,
                    ny);
  int map_w = nx * scale, map_h = ny * scale;
  int bar_x = map_w + MARGIN + 2;
  image im = {bar_x + BAR_WIDTH + 8 + LABEL_CHARS * GLYPH_ADVANCE + MARGIN,
              map_h > MIN_BAR_HEIGHT + 4 * MARGIN ? map_h : MIN_BAR_HEIGHT + 4 * MARGIN, NULL};
  im.rgb = malloc((size_t)im.width * im.height * 3);
  if (!im.rgb)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory for a %d x %d image", path, im.width,
                    im.height);
  fill_rect(&im, 0, 0, im.width, im.height, white);
  for (int j = 0; j < ny; j++) {
    int top = (ny - 1 - j) * scale;
    for (int i = 0; i < nx; i++)
      fill_rect(&im, i * scale, top, scale, scale,
                cell_colour(geom, bed, depth, dry_depth, depth_max, i, j));
  }
  int bar_height = map_h * 6 / 10 > MIN_BAR_HEIGHT ? map_h * 6 / 10 : MIN_BAR_HEIGHT;
  draw_colour_bar(&im, bar_x, (im.height - bar_height) / 2, bar_height, depth_max);
  draw_title(&im, title);

  char tmp_path[4096];
  FILE *f = ts_open_temp(path, tmp_path, sizeof tmp_path);
  if (!f) {
    free(im.rgb);
    return TS_ERR_IO;
  }
  png_image png;
  memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = (png_uint_32)im.width;
  png.height = (png_uint_32)im.height;
  png.format = PNG_FORMAT_RGB;
  int written = png_image_write_to_stdio(&png, f, 0, im.rgb, 0, NULL);
  free(im.rgb);
  if (!written) {
    ts_status status = ts_error(TS_ERR_IO, "%s: cannot write PNG: %s", path, png.message);
    fclose(f);
    remove(tmp_path);
    png_image_free(&png);
    return status;
  }
  return ts_commit_temp(f, tmp_path, path);
}
