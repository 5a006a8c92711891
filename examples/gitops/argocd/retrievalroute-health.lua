-- Argo CD health of a trellis.dev RetrievalRoute.
local hs = {status = "Progressing", message = "waiting for the Trellis operator"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < generation) then
  hs.message = "waiting for the operator to observe generation " .. generation
  return hs
end
local available = nil
local progressing = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Paused" and c.status == "True" then
    return {status = "Suspended", message = c.message}
  end
  if c.type == "Available" then
    available = c
  end
  if c.type == "Progressing" then
    progressing = c
  end
end
if progressing ~= nil and progressing.status == "True" then
  return {status = "Progressing", message = progressing.message}
end
if available ~= nil and available.status == "True" then
  return {status = "Healthy", message = "serving " .. (obj.status.servedVersion or "?")}
end
if available ~= nil then
  return {status = "Degraded", message = available.message}
end
if progressing ~= nil then
  return {status = "Degraded", message = progressing.message}
end
return hs
