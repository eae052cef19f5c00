/* VTK XML output for ParaView: ImageData (.vti), a 2D or 3D grid as an image of cells, one
 * Float32 CellData array per scalar variable and one 3-component Float32 array per vector
 * variable, stored inline as base64 (UInt32 byte-count header, then data), and the simulation
 * time as TimeValue field data (2D rasters are written as flat 2D grids); and UnstructuredGrid
 * (.vtu) of square cells of several sizes (the leaf cells of a quadtree grid). */
#include "tessera/io.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char base64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Writes `size` bytes as base64 with '=' padding. */
static void write_base64(FILE *f, const unsigned char *bytes, size_t size) {
  char quad[4];
  for (size_t k = 0; k < size; k += 3) {
    size_t left = size - k;
    uint32_t triple = (uint32_t)bytes[k] << 16;
    if (left > 1)
      triple |= (uint32_t)bytes[k + 1] << 8;
    if (left > 2)
      triple |= bytes[k + 2];
    quad[0] = base64_digits[(triple >> 18) & 63];
    quad[1] = base64_digits[(triple >> 12) & 63];
    quad[2] = left > 1 ? base64_digits[(triple >> 6) & 63] : '=';
    quad[3] = left > 2 ? base64_digits[triple & 63] : '=';
    fwrite(quad, 1, 4, f);
  }
}

static void write_xml_escaped(FILE *f, const char *text) {
  for (; *text; text++) {
    switch (*text) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*text, f);
    }
  }
}

static int host_is_little_endian(void) {
  const uint16_t probe = 1;
  unsigned char first;
  memcpy(&first, &probe, 1);
  return first == 1;
}

/* Writes one base64 DataArray of `bytes` bytes of `type` (Float32, Int32, UInt8, Float64, ...),
 * with ncomp components per tuple. */
static void write_raw_array(FILE *f, const char *type, const char *name, int ncomp,
                            const void *data, size_t bytes) {
  uint32_t byte_count = (uint32_t)bytes;
  fprintf(f, "        <DataArray type=\"%s\" Name=\"", type);
  write_xml_escaped(f, name);
  if (ncomp > 1)
    fprintf(f, "\" NumberOfComponents=\"%d", ncomp);
  fprintf(f, "\" format=\"binary\">\n          ");
  write_base64(f, (const unsigned char *)&byte_count, sizeof byte_count);
  write_base64(f, (const unsigned char *)data, bytes);
  fprintf(f, "\n        </DataArray>\n");
}

/* Writes one Float32 CellData array of `cells` tuples of ncomp components. */
static void write_cell_array(FILE *f, const char *name, int ncomp, const float *values,
                             size_t cells) {
  write_raw_array(f, "Float32", name, ncomp, values, cells * (size_t)ncomp * sizeof *values);
}

ts_status ts_vti_write_grid(const char *path, const ts_grid *grid, double time, int nvars,
                            const ts_out_var *vars, int nvectors, const ts_out_vector *vectors) {
  const int *n = grid->n;
  int dim = grid->dim;
  if ((dim != 2 && dim != 3) || n[0] < 1 || n[1] < 1 || n[2] < 1 || (dim == 2 && n[2] != 1))
    return ts_error(TS_ERR_INPUT, "%s: cannot write a %dD grid of %d x %d x %d cells", path, dim,
                    n[0], n[1], n[2]);
  for (int k = 0; k < nvectors; k++)
    if (!vectors[k].v[0] || !vectors[k].v[1] || (dim == 3 && !vectors[k].v[2]))
      return ts_error(TS_ERR_INPUT, "%s: vector '%s' lacks a component of the %dD grid", path,
                      vectors[k].name, dim);
  size_t cells = (size_t)ts_grid_cells(grid);
  int max_comp = nvectors > 0 ? 3 : 1;
  if (cells * (size_t)max_comp * sizeof(float) > UINT32_MAX)
    return ts_error(TS_ERR_INPUT, "%s: grid too large for a VTK UInt32 header", path);
  float *values = malloc(cells * (size_t)max_comp * sizeof *values);
  if (!values)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  char tmp_path[4096];
  FILE *f = ts_open_temp(path, tmp_path, sizeof tmp_path);
  if (!f) {
    free(values);
    return TS_ERR_IO;
  }
  /* A 2D grid is a flat image: no cells along z, unit z spacing. */
  int nz = dim == 3 ? n[2] : 0;
  double dz = dim == 3 ? grid->dx[2] : 1.0;
  fprintf(f, "<?xml version=\"1.0\"?>\n");
  fprintf(f,
          "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"%s\" "
          "header_type=\"UInt32\">\n",
          host_is_little_endian() ? "LittleEndian" : "BigEndian");
  fprintf(f,
          "  <ImageData WholeExtent=\"0 %d 0 %d 0 %d\" Origin=\"%.17g %.17g %.17g\" "
          "Spacing=\"%.17g %.17g %.17g\">\n",
          n[0], n[1], nz, grid->origin[0], grid->origin[1], grid->origin[2], grid->dx[0],
          grid->dx[1], dz);
  fprintf(f, "    <FieldData>\n");
  fprintf(f,
          "      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
          "format=\"ascii\">%.17g</DataArray>\n",
          time);
  fprintf(f, "    </FieldData>\n");
  fprintf(f, "    <Piece Extent=\"0 %d 0 %d 0 %d\">\n", n[0], n[1], nz);
  fprintf(f, "      <PointData>\n      </PointData>\n");
  fprintf(f, "      <CellData>\n");
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < cells; c++)
      values[c] = (float)vars[k].v[c];
    write_cell_array(f, vars[k].name, 1, values, cells);
  }
  for (int k = 0; k < nvectors; k++) {
    const double *const *v = vectors[k].v;
    for (size_t c = 0; c < cells; c++)
      for (int a = 0; a < 3; a++)
        values[3 * c + a] = v[a] ? (float)v[a][c] : 0.0f;
    write_cell_array(f, vectors[k].name, 3, values, cells);
  }
  fprintf(f, "      </CellData>\n");
  fprintf(f, "    </Piece>\n");
  fprintf(f, "  </ImageData>\n");
  fprintf(f, "</VTKFile>\n");
  free(values);
  return ts_commit_temp(f, tmp_path, path);
}

ts_status ts_vti_write(const char *path, const ts_raster *geom, double time, int nvars,
                       const ts_out_var *vars) {
  ts_grid grid = ts_grid_2d(geom->ncols, geom->nrows, geom->cellsize, geom->xll, geom->yll);
  return ts_vti_write_grid(path, &grid, time, nvars, vars, 0, NULL);
}

ts_status ts_vtu_write_squares(const char *path, const ts_out_squares *sq, double time, int nvars,
                               const ts_out_var *vars) {
  int64_t n = sq->n;
  if (n < 1 || (double)n * 4 * 3 * sizeof(double) > UINT32_MAX)
    return ts_error(TS_ERR_INPUT, "%s: cannot write %lld cells to a VTK file", path, (long long)n);
  size_t cells = (size_t)n;
  double *points = calloc(12 * cells, sizeof(double));
  int32_t *ints = calloc(4 * cells, sizeof(int32_t));
  unsigned char *types = calloc(cells, 1);
  float *values = calloc(cells, sizeof(float));
  if (!points || !ints || !types || !values) {
    free(points), free(ints), free(types), free(values);
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  }
  char tmp_path[4096];
  FILE *f = ts_open_temp(path, tmp_path, sizeof tmp_path);
  if (!f) {
    free(points), free(ints), free(types), free(values);
    return TS_ERR_IO;
  }
  /* each cell a VTK_PIXEL (8) of its own 4 corners, x fastest */
  for (size_t c = 0; c < cells; c++) {
    double x0 = sq->x0 + sq->dx * sq->i0[c], y0 = sq->y0 + sq->dx * sq->j0[c];
    double w = sq->dx * sq->width[c];
    double corner[4][2] = {{x0, y0}, {x0 + w, y0}, {x0, y0 + w}, {x0 + w, y0 + w}};
    for (int q = 0; q < 4; q++) {
      points[12 * c + 3 * q] = corner[q][0];
      points[12 * c + 3 * q + 1] = corner[q][1];
      points[12 * c + 3 * q + 2] = 0;
    }
    types[c] = 8;
  }
  fprintf(f, "<?xml version=\"1.0\"?>\n");
  fprintf(f,
          "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"%s\" "
          "header_type=\"UInt32\">\n",
          host_is_little_endian() ? "LittleEndian" : "BigEndian");
  fprintf(f, "  <UnstructuredGrid>\n    <FieldData>\n");
  fprintf(f,
          "      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
          "format=\"ascii\">%.17g</DataArray>\n",
          time);
  fprintf(f, "    </FieldData>\n");
  fprintf(f, "    <Piece NumberOfPoints=\"%lld\" NumberOfCells=\"%lld\">\n", (long long)(4 * n),
          (long long)n);
  fprintf(f, "      <Points>\n");
  write_raw_array(f, "Float64", "Points", 3, points, sizeof(double) * 12 * cells);
  fprintf(f, "      </Points>\n      <Cells>\n");
  for (size_t c = 0; c < 4 * cells; c++)
    ints[c] = (int32_t)c;
  write_raw_array(f, "Int32", "connectivity", 1, ints, sizeof(int32_t) * 4 * cells);
  for (size_t c = 0; c < cells; c++)
    ints[c] = (int32_t)(4 * (c + 1));
  write_raw_array(f, "Int32", "offsets", 1, ints, sizeof(int32_t) * cells);
  write_raw_array(f, "UInt8", "types", 1, types, cells);
  fprintf(f, "      </Cells>\n      <CellData>\n");
  if (sq->level) {
    for (size_t c = 0; c < cells; c++)
      ints[c] = sq->level[c];
    write_raw_array(f, "Int32", "level", 1, ints, sizeof(int32_t) * cells);
  }
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < cells; c++)
      values[c] = (float)vars[k].v[c];
    write_cell_array(f, vars[k].name, 1, values, cells);
  }
  fprintf(f, "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n");
  free(points), free(ints), free(types), free(values);
  return ts_commit_temp(f, tmp_path, path);
}
