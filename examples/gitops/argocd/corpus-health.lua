-- Argo CD health of a trellis.dev Corpus.
local hs = {status = "Progressing", message = "waiting for the Trellis operator"}
if obj.status == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < generation) then
  hs.message = "waiting for the operator to observe generation " .. generation
  return hs
end
local function condition(kind)
  if obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == kind then
        return c
      end
    end
  end
  return nil
end
local paused = condition("Paused")
if paused ~= nil and paused.status == "True" then
  return {status = "Suspended", message = paused.message}
end
local ready = condition("Ready")
local ingesting = condition("Ingesting")
if ready ~= nil and ready.status == "False" and ready.reason ~= "Ingesting" then
  return {status = "Degraded", message = ready.message}
end
if ingesting ~= nil and ingesting.status == "True" then
  return {status = "Progressing", message = ingesting.message}
end
if ready ~= nil and ready.status == "True" then
  -- Documents that failed are reported, but the index serves.
  local degraded = condition("Degraded")
  if degraded ~= nil and degraded.status == "True" then
    return {status = "Healthy", message = ready.message .. "; " .. degraded.message}
  end
  return {status = "Healthy", message = ready.message}
end
return hs
